"""Percentile summaries with the sample count beside them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

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


def latency_stats_in_place(a: npt.NDArray[np.float64]) -> LatencyStats:
    """latency_stats(a), the same numbers, with the percentiles taken in `a` itself (its
    order is lost, its values stay): no copy of an array of millions (a simulated hour's
    gaps), whose fresh memory costs more than the partition does. The mean first, while
    the order is the caller's (a sum's rounding depends on it)."""
    if len(a) == 0:
        return LatencyStats.empty()
    mean, top = float(a.mean()), float(a.max())
    ps = np.percentile(a, list(PERCENTILES.values()), overwrite_input=True)
    p50, p90, p95, p99, p999 = (float(q) for q in ps)
    return LatencyStats(p50, p90, p95, p99, p999, top, mean, len(a))


def thin_percentiles(n: int) -> list[str]:
    """Percentiles shown with too few samples behind them."""
    return [k for k, need in MIN_SAMPLES.items() if 0 < n < need]
