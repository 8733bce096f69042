"""A measured level against the SLO (`slo` block) and, open loop, its saturation verdict;
and the levels of a `--find-max-load` search, chosen one at a time as results come in.

The queue for the verdict is the server's own waiting count, from its /metrics
scrapes over the level, where the engine publishes one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from math import inf
from typing import Any

from inferlab.load.spec import Level
from inferlab.metrics.stats import latency_stats
from inferlab.records import RequestRecord
from inferlab.slo.attainment import SloLevel, evaluate
from inferlab.slo.grammar import Slo
from inferlab.slo.outcome import NS, outcomes
from inferlab.slo.saturation import Saturation, completed_rate_per_s, saturation
from inferlab.slo.search import MaxLoadSearch
from inferlab.summary import LevelSummary


def judge_slo(slo: Slo | None, records: list[RequestRecord]) -> SloLevel | None:
    return None if slo is None else evaluate(slo, outcomes(records))


def _server_queue(
    samples: list[Any] | None, window_s: tuple[float, float]
) -> tuple[list[float], list[float]] | None:
    """(times, waiting) from the level's scrapes while requests arrived (the drain after the
    last arrival is no growth); None when the server publishes no waiting count."""
    snaps = [s.snapshot for s in samples or () if s.snapshot is not None]
    start, end = window_s
    got = [
        (s.t_mono_s, s.waiting)
        for s in snaps
        if s.waiting is not None and start <= s.t_mono_s <= end
    ]
    if len(got) < 2:
        return None
    return [t for t, _ in got], [w for _, w in got]


def judge_saturation(
    level: Level, records: list[RequestRecord], samples: list[Any] | None, t0_s: float
) -> Saturation | None:
    """Open-loop levels only: offered (the arrivals as scheduled) vs completed, and the queue.
    `t0_s`: the run's origin on the monotonic clock the scrapes are stamped with."""
    measured = [r for r in records if r.phase == "measure"]
    if level.kind != "rate" or not measured:
        return None
    scheduled = [r.scheduled_ns * NS for r in measured]
    offered = completed_rate_per_s(scheduled) or level.value
    ends = [r.event_ns[-1] * NS for r in measured if r.ok]
    window = (t0_s + min(scheduled), t0_s + max(scheduled))
    return saturation(offered, ends, _server_queue(samples, window), "server_waiting")


def reasoning_blocks(level: LevelSummary, records: list[RequestRecord]) -> LevelSummary:
    """ttfo_s percentiles and reasoning tokens, on levels whose streams carried reasoning."""
    measured = [r for r in records if r.phase == "measure"]
    if not any(r.reasoning_tokens for r in measured):
        return level
    ttfo = [o.ttfo_s for o in outcomes(measured) if o.ttfo_s is not None and o.ttfo_s != inf]
    return replace(
        level,
        ttfo_s=latency_stats(ttfo),
        reasoning_tokens=sum(r.reasoning_tokens for r in measured),
    )


def record_probe(
    search: MaxLoadSearch | None, slo: Slo | None, value: float, records: list[RequestRecord]
) -> None:
    """Tell the search how the level it asked for went (it then picks the next)."""
    if search is not None and slo is not None:
        search.record(value, evaluate(slo, outcomes(records)))


def search_levels(levels: list[Level], search: MaxLoadSearch | None) -> Iterator[Level]:
    """The given levels, or the search's, each asked for once the one before is recorded."""
    if search is None:
        yield from levels
        return
    yield from (Level(search.kind, value) for value in search.values())
