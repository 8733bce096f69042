"""Percentile summaries with the sample count beside them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}
# Fewest samples for which a percentile means anything: about 10 beyond it.
MIN_SAMPLES = {"p50": 1, "p90": 10, "p95": 20, "p99": 100, "p999": 1000}


def summarize(values: Sequence[float]) -> dict[str, float | int | None]:
    """p50 p90 p95 p99 p999 max mean and n; None everywhere when there are no values."""
    if len(values) == 0:
        return {**dict.fromkeys(PERCENTILES), "max": None, "mean": None, "n": 0}
    a = np.asarray(values, dtype=float)
    qs = np.percentile(a, list(PERCENTILES.values()))
    out: dict[str, float | int | None] = {k: float(v) for k, v in zip(PERCENTILES, qs, strict=True)}
    out["max"] = float(a.max())
    out["mean"] = float(a.mean())
    out["n"] = len(values)
    return out


def thin_percentiles(n: int) -> list[str]:
    """Percentiles shown with too few samples behind them."""
    return [k for k, need in MIN_SAMPLES.items() if 0 < n < need]
