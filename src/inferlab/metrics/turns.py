"""A conversation level's latencies turn by turn: TTFT and TPOT of every turn k."""

from __future__ import annotations

from inferlab.metrics.requests import latency
from inferlab.metrics.stats import latency_stats
from inferlab.records import RequestRecord
from inferlab.summary import TurnStats


def per_turn(records: list[RequestRecord]) -> tuple[TurnStats, ...]:
    """TTFT and TPOT of each conversation turn, over the level's successful requests."""
    by_turn: dict[int, list[RequestRecord]] = {}
    for r in records:
        by_turn.setdefault(r.turn, []).append(r)
    out = []
    for turn in sorted(by_turn):
        lat = [x for x in (latency(r) for r in by_turn[turn]) if x is not None]
        out.append(
            TurnStats(
                turn=turn,
                requests_ok=len(lat),
                ttft_s=latency_stats([x.ttft_s for x in lat]),
                tpot_s=latency_stats([x.tpot_s for x in lat if x.tpot_s is not None]),
            )
        )
    return tuple(out)
