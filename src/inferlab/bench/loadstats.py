"""What a level's load did, beside what it asked: schedule kept, rate offered and achieved,
prefix-cache hits the server saw beside those the workload implies.

An open-loop level states `offered_rate_per_s` (its schedule), `achieved_rate_per_s`
(its sends) and `schedule_lag_s` (send minus scheduled, per request); a p99 lag above
5 ms means the client could not keep the schedule. A workload that shares prompt text
on purpose (prefix groups, trace hash blocks) expects cache hits: they are reported as
a ratio, not as the `prefix_cache_hit` fault they are for unique prompts.
"""

from __future__ import annotations

import dataclasses

from inferlab.metrics.checks import warning
from inferlab.metrics.stats import latency_stats
from inferlab.metrics.turns import per_turn
from inferlab.records import RequestRecord
from inferlab.summary import LevelSummary, RunWarning

LAG_WARN_S = 0.005  # p99 schedule lag above this: the client did not keep the schedule
NS = 1e9


def _rate(stamps_ns: list[int]) -> float | None:
    if len(stamps_ns) < 2:
        return None
    span_s = (max(stamps_ns) - min(stamps_ns)) / NS
    return (len(stamps_ns) - 1) / span_s if span_s > 0 else None


def server_hit_ratio(records: list[RequestRecord]) -> float | None:
    """Prompt tokens the server says it served from its cache, over all prompt tokens:
    llama.cpp's timings.cache_n, else usage.prompt_tokens_details.cached_tokens."""
    cached = total = 0
    seen = False
    for r in records:
        c = r.server_cached_tokens
        if c is None or not r.prompt_tokens:
            continue
        seen = True
        cached += c
        total += r.prompt_tokens
    return cached / total if seen and total else None


def load_block(
    s: LevelSummary, records: list[RequestRecord], shares: bool, implied: float | None
) -> tuple[LevelSummary, list[RunWarning]]:
    """The level summary with its load facts; a warning when the schedule slipped."""
    measured = [r for r in records if r.phase == "measure" and r.send_ns]
    warns: list[RunWarning] = []
    if any(r.conversation_id is not None for r in measured):
        s = dataclasses.replace(s, per_turn=per_turn(measured))
    if shares:
        s = dataclasses.replace(
            s,
            prefix_cache_hit_ratio=server_hit_ratio(measured),
            prefix_cache_hit_ratio_implied=implied,
        )
    if s.kind != "rate" or not measured:
        return s, warns
    lag = latency_stats([max(0, r.send_ns - r.scheduled_ns) / NS for r in measured])
    s = dataclasses.replace(
        s,
        offered_rate_per_s=_rate([r.scheduled_ns for r in measured]),
        achieved_rate_per_s=_rate([r.send_ns for r in measured]),
        schedule_lag_s=lag,
    )
    if (lag.p99 or 0.0) > LAG_WARN_S:
        msg = (
            f"requests were sent late: schedule lag p99 {(lag.p99 or 0) * 1e3:.3g} ms, max "
            f"{(lag.max or 0) * 1e3:.3g} ms (the client could not keep the schedule; "
            "add --workers or --max-connections)"
        )
        warns.append(warning("schedule_lag", s.label, "warning", msg))
    return s, warns


def counters_hit_ratio(s: LevelSummary, shares: bool) -> LevelSummary:
    """Where no response said how many prompt tokens were cached, the server's own
    counters over the level (vLLM prefix_cache_hits / prefix_cache_queries)."""
    srv = s.server
    if not shares or s.prefix_cache_hit_ratio is not None or srv is None:
        return s
    hits, queries = srv.prefix_cache_hit_tokens, srv.prefix_cache_query_tokens
    if hits is None or not queries:
        return s
    return dataclasses.replace(s, prefix_cache_hit_ratio=hits / queries)


def allow_prefix_hits(warns: list[RunWarning], shares: bool) -> list[RunWarning]:
    """A workload that shares prompt text on purpose: cache hits are what it asked for."""
    if not shares:
        return warns
    return [w for w in warns if w.code != "prefix_cache_hit"]
