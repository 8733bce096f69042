"""Progress of a sweep: the hooks the benchmark calls, and a rich progress bar behind them.

Light on purpose (no aiohttp, rich imported when a bar is made), so a command can
subclass the hooks at import time without loading the HTTP client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inferlab.records import RequestRecord
from inferlab.summary import LevelSummary

if TYPE_CHECKING:
    from inferlab.bench.runner import Level


class Hooks:
    """Console feedback; the CLI passes a rich progress bar, tests pass nothing."""

    def level_start(self, level: Level, total: int) -> None: ...
    def request_done(self, rec: RequestRecord) -> None: ...
    def level_end(self, level: Level, summary: LevelSummary) -> None: ...
    def close(self) -> None: ...


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

    def level_start(self, level: Level, total: int) -> None:
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
