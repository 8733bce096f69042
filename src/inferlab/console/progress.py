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
    from inferlab.bench.estimate import LevelCost
    from inferlab.load.spec import Level


class ProgressHooks(Hooks):
    """A rich progress bar per level counting measured requests (warm-ups said apart);
    given the sweep's plan, the estimate of its duration once one request is timed."""

    def __init__(self, plan: list[LevelCost] | None = None) -> None:
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
        self.plan = plan  # until the first request is timed
        self.costs = list(plan or [])  # the levels still to run, for the estimates after each
        self.warm = (0, 0)  # warm-ups done, of how many, this level
        self.label = ""
        self.started = False  # rich's stop() of a bar never started still writes a newline

    def level_start(self, level: Level, measured: int, warmup: int = 0) -> None:
        for note in self.notes:
            print(note, file=sys.stderr, flush=True)
        self.notes = []
        self.progress.start()
        self.started = True
        self.warm, self.label = (0, warmup), f"{level.label:>10}"
        self.task = self.progress.add_task(self._described(), total=measured)

    def _described(self) -> str:
        done, of = self.warm
        return f"{self.label} warm-up {done}/{of}" if done < of else self.label

    def request_done(self, rec: RequestRecord) -> None:
        if self.task is None:
            return
        if rec.phase != "measure":
            self.warm = (self.warm[0] + 1, self.warm[1])
            self.progress.update(self.task, description=self._described())
            return
        self.progress.advance(self.task)
        if self.plan is not None and rec.ok and rec.end_ns > rec.send_ns:
            from inferlab.bench.estimate import estimate_line

            line = estimate_line(self.plan, (rec.end_ns - rec.send_ns) * 1e-9)
            self.plan = None  # once: from the first request timed
            self.progress.console.print(line, highlight=False)

    def level_end(self, level: Level, summary: LevelSummary) -> None:
        self._estimate_rest(level, summary)
        tpot = summary.tpot_s.p50
        tpot_text = "-" if tpot is None else f"{tpot * 1e3:.1f}"
        self.progress.update(
            self.task,
            description=f"{level.label:>10} TPOT {tpot_text} ms, "
            f"{summary.output_tokens_per_s_total:.0f} tok/s",
        )

    def _estimate_rest(self, level: Level, summary: LevelSummary) -> None:
        """The levels left, at least as long as this level's median request: tighter than
        the first estimate, as requests slow down with load."""
        done = next((i for i, c in enumerate(self.costs) if c.label == level.label), None)
        if done is not None:  # the first left of this level's (--repeat runs it again later)
            del self.costs[done]
        request_s = summary.e2e_s.p50
        if self.costs and request_s:
            from inferlab.bench.estimate import remaining_line

            line = remaining_line(self.costs, request_s, level.label)
            self.progress.console.print(line, highlight=False)

    def close(self) -> None:
        if self.started:
            self.progress.stop()
