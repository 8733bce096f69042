"""A rich progress bar per level, behind the hooks the benchmark calls (bench.progress.Hooks).

rich is imported when a bar is made, so a command can subclass it at import time
without loading rich or the HTTP client.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from inferlab.bench.progress import Hooks
from inferlab.records import RequestRecord
from inferlab.summary import LevelSummary

if TYPE_CHECKING:
    from inferlab.load.spec import Level


class ProgressHooks(Hooks):
    """A rich progress bar per level."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self.progress = Progress(
            "[bold]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            refresh_per_second=2,  # a bar, not a clock: each refresh costs the stamping loop
        )
        self.task: Any = None
        # Lines said once the server accepted the run (e.g. how the floor was found), so a
        # refused run's error stays the only line.
        self.notes: list[str] = []

    def level_start(self, level: Level, total: int) -> None:
        for note in self.notes:
            print(note, file=sys.stderr, flush=True)
        self.notes = []
        self.progress.start()
        self.task = self.progress.add_task(f"{level.label:>10}", total=total)

    def request_done(self, rec: RequestRecord) -> None:
        if self.task is not None:
            self.progress.advance(self.task)

    def level_end(self, level: Level, summary: LevelSummary) -> None:
        tpot = summary.tpot_s.p50
        tpot_text = "-" if tpot is None else f"{tpot * 1e3:.1f}"
        self.progress.update(
            self.task,
            description=f"{level.label:>10} TPOT {tpot_text} ms, "
            f"{summary.output_tokens_per_s_total:.0f} tok/s",
        )

    def close(self) -> None:
        self.progress.stop()
