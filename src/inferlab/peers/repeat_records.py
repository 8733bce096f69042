"""A peer's repeated benchmark (AIPerf `--num-profile-runs N`) as typed JSON records: each
run with its statistics and whether it is the same measurement as the first, and the
tool's own interval over the runs beside inferlab's.

They travel in the summary's `extra["peer_repeats"]` (`RepeatsBlock.to_json()`) and are
read back with `RepeatsBlock.from_json`, every value checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inferlab.jsonrecord import Count, JsonRecord, optional
from inferlab.summary import RepeatStats, Uncertainty

Verdict = Literal["same_measurement", "cache_served", "unlike_first"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInterval(JsonRecord):
    """The tool's own figure for one statistic over its runs: the mean of the runs' own
    values, their std and CV, and its interval `ci` (the statistic's unit, as inferlab
    names it: seconds for `ttft_s.p50`). `ci` never leaves what is possible: a low end the
    tool wrote below zero is clipped to 0, and `low_as_written` keeps the tool's figure."""

    quantity: str  # inferlab's name: "ttft_s.p50", "output_tokens_per_s_total"
    metric: str  # the tool's key: "time_to_first_token_p50"
    mean: float
    std: float
    cv: float | None
    ci: tuple[float, ...]
    low_as_written: float | None = optional()  # only where it was clipped


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAggregate(JsonRecord):
    """What the tool itself said over all its runs (none left out)."""

    tool: str
    runs: Count
    confidence: float  # 0.95: `ci` is the 95 % interval
    method: str
    intervals: tuple[ToolInterval, ...]

    def of(self, quantity: str) -> ToolInterval | None:
        return next((i for i in self.intervals if i.quantity == quantity), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class RepeatRun(JsonRecord):
    """One run: its statistics recomputed from its per-request records, the tool's own,
    and whether it is the same measurement as the first run (`reason` says why not)."""

    label: str  # "run_0002"
    repeat: Count  # 0: the first run
    verdict: Verdict
    reason: str | None = optional()
    stats: RepeatStats
    as_written: RepeatStats | None = optional()
    ttft_fastest_s: float | None = optional()
    fastest_line: Count | None = optional()  # its line in the run's per-request file
    prompt_cache_share: float | None = optional()  # cached / prompt tokens, per the server
    prefill_floor_s: float | None = optional()  # with a floor: the prompt's compute floor


@dataclass(frozen=True, slots=True, kw_only=True)
class RepeatsBlock(JsonRecord):
    """The runs, which of them the level combines (`kept`) and which it leaves out
    (`apart`, with their own intervals, pooled apart), the rule that told them apart,
    and the tool's own interval over every run."""

    runs: tuple[RepeatRun, ...]
    kept: tuple[str, ...]
    apart: tuple[str, ...]
    apart_uncertainty: Uncertainty | None = optional()
    rule: str
    tool: ToolAggregate | None = optional()
