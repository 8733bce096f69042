"""Percentile summaries with the sample count beside them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from inferlab.summary import LatencyStats

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}
# Fewest samples for which a percentile means anything: about 10 beyond it.
MIN_SAMPLES = {"p50": 1, "p90": 10, "p95": 20, "p99": 100, "p999": 1000}


def latency_stats(values: Sequence[float]) -> LatencyStats:
    """p50 p90 p95 p99 p999 max mean and n; None everywhere when there are no values."""
    if len(values) == 0:
        return LatencyStats.empty()
    a = np.asarray(values, dtype=float)
    p50, p90, p95, p99, p999 = (float(q) for q in np.percentile(a, list(PERCENTILES.values())))
    return LatencyStats(p50, p90, p95, p99, p999, float(a.max()), float(a.mean()), len(values))


def thin_percentiles(n: int) -> list[str]:
    """Percentiles shown with too few samples behind them."""
    return [k for k, need in MIN_SAMPLES.items() if 0 < n < need]
