"""A level measured N times (`bench --repeat N`): each repeat's own statistics, the level's
over every repeat's requests, and the 95 % intervals of its percentiles and throughput:
`ci95`, where the level's long-run value lies (the bootstrap is metrics/intervals.py's),
and with two repeats or more `pi95`, where one more run of the level would land (over the
repeats' own values of the statistic).
"""

from __future__ import annotations

import dataclasses
from dataclasses import fields

from inferlab.metrics.columns import request_latencies
from inferlab.metrics.intervals import (
    RESAMPLES,
    ci_of,
    cv_of,
    prediction_interval,
    requests_for_upper_bound,
    resampled_percentiles,
    resampled_ratio,
)
from inferlab.records import RequestRecord
from inferlab.summary import Interval, LatencyStats, LevelSummary, RepeatStats, Uncertainty

QUANTITIES = ("ttft_s", "tpot_s", "e2e_s")  # LevelSummary fields with intervals
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}
THROUGHPUT = "output_tokens_per_s_total"
ONE_REPEAT = (
    "bootstrap over requests: one repeat, so the interval does not cover drift between runs "
    "(bench --repeat 3 for one that does)"
)
HIERARCHICAL = (
    "hierarchical bootstrap: repeats drawn with replacement, then requests within each; "
    "percentile interval"
)


def repeat_stats(repeat: int, s: LevelSummary) -> RepeatStats:
    """One repeat's block of summary.json, from its own level summary (the fields they
    share, each as the level states it)."""
    shared = {f.name: getattr(s, f.name) for f in fields(RepeatStats) if f.name != "repeat"}
    return RepeatStats(repeat=repeat, **shared)


def pooled(combined: LevelSummary, parts: list[LevelSummary]) -> LevelSummary:
    """The level over every repeat: statistics over all requests (as summarised), but the
    window is the repeats' windows added (other levels ran between them), rates over it."""
    window = sum(p.window_s for p in parts)
    if window <= 0 or len(parts) < 2:
        return combined
    scale = combined.window_s / window
    total = combined.total_tokens_per_s
    return dataclasses.replace(
        combined,
        window_s=window,
        output_tokens_per_s_total=combined.output_tokens / window,
        requests_per_s=None if combined.requests_per_s is None else combined.requests_ok / window,
        total_tokens_per_s=None if total is None else total * scale,
        mean_active_streams=sum(p.mean_active_streams * p.window_s for p in parts) / window,
        repeats=tuple(repeat_stats(i, p) for i, p in enumerate(parts)),
    )


def _stat(stats: LatencyStats, name: str) -> float | None:
    v = getattr(stats, name)
    return None if v is None else float(v)


def latency_intervals(
    groups: list[list[RequestRecord]], combined: LevelSummary, parts: list[LevelSummary]
) -> list[Interval]:
    """Each quantity's percentiles with their interval and (2+ repeats) their CV and
    prediction interval."""
    out: list[Interval] = []
    per_repeat = [request_latencies(g) for g in groups]
    for q in QUANTITIES:
        res = resampled_percentiles([lat[q] for lat in per_repeat], list(PERCENTILES.values()))
        for k, p in enumerate(PERCENTILES):
            value = _stat(getattr(combined, q), p)
            if value is None or not len(res):
                continue
            ci = ci_of(value, res[:, k])
            values = [v for part in parts if (v := _stat(getattr(part, q), p)) is not None]
            cv = cv_of(values) if len(parts) > 1 else None
            few = getattr(combined, q).n < requests_for_upper_bound(PERCENTILES[p])
            out.append(
                Interval(
                    quantity=f"{q}.{p}",
                    value=value,
                    ci95=(ci.low, ci.high),
                    cv_across_repeats=cv,
                    tail_undersampled=True if few else None,
                    # each repeat's own percentile: the next run's is one more of them
                    pi95=prediction_interval(values),
                )
            )
    return out


def throughput_interval(combined: LevelSummary, parts: list[LevelSummary]) -> Interval | None:
    """Output tok/s over repeats drawn with replacement (tokens / window), and where the
    next repeat's tok/s would land; None with one repeat (nothing to resample)."""
    tokens = [float(p.output_tokens) for p in parts]
    windows = [p.window_s for p in parts]
    res = resampled_ratio(tokens, windows)
    if not len(res):
        return None
    value = combined.output_tokens_per_s_total
    ci = ci_of(value, res)
    per_repeat = [p.output_tokens_per_s_total for p in parts]
    return Interval(
        quantity=THROUGHPUT,
        value=value,
        ci95=(ci.low, ci.high),
        cv_across_repeats=cv_of(per_repeat),
        pi95=prediction_interval(per_repeat),
    )


def level_uncertainty(
    groups: list[list[RequestRecord]], combined: LevelSummary, parts: list[LevelSummary]
) -> Uncertainty | None:
    """The level's intervals (None when no request finished)."""
    intervals = latency_intervals(groups, combined, parts)
    tput = throughput_interval(combined, parts)
    if tput is not None:
        intervals.append(tput)
    if not intervals:
        return None
    n = len(groups)
    return Uncertainty(
        repeats=n,
        covers_drift=n > 1,
        method=HIERARCHICAL if n > 1 else ONE_REPEAT,
        resamples=RESAMPLES,
        intervals=tuple(intervals),
    )
