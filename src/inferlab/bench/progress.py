"""The hooks a sweep calls as it goes (level start, each request, level end, close).

The benchmark calls them and prints nothing itself; the console's progress bar
(console/progress.py) and the tests subclass them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.records import RequestRecord
from inferlab.summary import LevelSummary

if TYPE_CHECKING:
    from inferlab.load.spec import Level


class Hooks:
    """Does nothing: the CLI passes a progress bar (console.progress), tests pass this."""

    def level_start(self, level: Level, measured: int, warmup: int = 0) -> None: ...
    def request_done(self, rec: RequestRecord) -> None: ...
    def level_end(self, level: Level, summary: LevelSummary) -> None: ...
    def close(self) -> None: ...
