"""95 % confidence intervals by bootstrap: over the requests within each repeat, and over
the repeats themselves where a level ran two times or more (a two-stage, hierarchical
bootstrap), so that an interval covers the machine's drift between runs as well as the
spread from one request to the next.

One resample draws R repeats with replacement from the R measured, then, for each drawn
repeat, as many of its requests with replacement as it holds; the statistic is taken over
the pooled draw, as the level's own statistic is taken over every repeat's requests. The
interval is the 2.5th and 97.5th percentiles of RESAMPLES such statistics (percentile
bootstrap), widened to hold the measured value and never below `lower` (no negative time).
Everything is numpy over arrays, from a Generator seeded with SEED: the same numbers give
the same interval.

Beside it, a prediction interval (`pi95`): where one more run of the level would land, from
the R repeats' own values of the statistic: mean +- t(0.975, R-1) x s x sqrt(1 + 1/R), s
their sample standard deviation (exact for normal repeats; Student's t, since s is itself
estimated from R values). It needs two repeats or more: one run says nothing of the next.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[Any]  # float64
RESAMPLES = 2000
SEED = 39_2026  # any fixed seed: the interval of the same numbers never moves
CONFIDENCE = 0.95
_CELLS = 4_000_000  # values drawn at once (about 32 MB): resamples go in chunks of this
Z_975 = 1.959963984540054  # the normal distribution's 97.5th percentile


@dataclass(frozen=True, slots=True)
class Ci:
    """A statistic's measured value and its interval [low, high]."""

    value: float
    low: float
    high: float

    @property
    def holds_zero(self) -> bool:
        return self.low <= 0.0 <= self.high


def requests_for_upper_bound(pct: float, confidence: float = CONFIDENCE) -> int:
    """The fewest requests whose largest bounds the `pct` percentile from above at the
    two-sided `confidence`, whatever the distribution: all n below it has chance
    (pct/100)^n, which must be at most (1 - confidence) / 2. p99: 368; p95: 72; p90: 36;
    p50: 6. With fewer, nothing the requests show bounds the percentile from above (the
    bootstrap's upper end is about their largest, and misses repeats)."""
    q = pct / 100.0
    if q <= 0.0:
        return 1
    if q >= 1.0:
        return 2**63 - 1
    return math.ceil(math.log((1.0 - confidence) / 2.0) / math.log(q))


def resampled_percentiles(
    groups: Sequence[Floats], qs_pct: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED
) -> Floats:
    """(resamples, len(qs_pct)): the pooled percentiles of each hierarchical resample of
    `groups` (one array of per-request values per repeat; empty ones are left out).
    No rows when every group is empty."""
    kept = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not kept:
        return np.empty((0, len(qs_pct)))
    rng = np.random.default_rng(seed)
    sizes = np.array([len(g) for g in kept], dtype=np.int64)
    flat, starts = np.concatenate(kept), np.cumsum(sizes) - sizes
    r, m = len(kept), int(sizes.max())
    out = np.empty((resamples, len(qs_pct)))
    chunk = max(1, _CELLS // (r * m))
    for b0 in range(0, resamples, chunk):
        b = min(chunk, resamples - b0)
        pick = rng.integers(0, r, (b, r)) if r > 1 else np.zeros((b, 1), dtype=np.int64)
        n = sizes[pick]  # (b, r): requests of each drawn repeat
        j = (rng.random((b, r, m)) * n[..., None]).astype(np.int64)
        vals = flat[starts[pick][..., None] + j]  # j < n: inside the drawn repeat
        vals[np.arange(m)[None, None, :] >= n[..., None]] = np.inf  # past a repeat's size
        vals = np.sort(vals.reshape(b, r * m), axis=1)
        out[b0 : b0 + b] = _sorted_percentiles(vals, n.sum(axis=1), qs_pct)
    return out


def _sorted_percentiles(rows: Floats, k: npt.NDArray[np.int64], qs_pct: Sequence[float]) -> Floats:
    """Each row's percentiles over its first k values (sorted), numpy's linear rule."""
    pos = (k[:, None] - 1) * (np.asarray(qs_pct, dtype=float)[None, :] / 100.0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, k[:, None] - 1)
    a, c = np.take_along_axis(rows, lo, 1), np.take_along_axis(rows, hi, 1)
    out: Floats = a + (c - a) * (pos - lo)
    return out


def resampled_ratio(
    numerators: Sequence[float],
    denominators: Sequence[float],
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Floats:
    """sum(num) / sum(den) over repeats drawn with replacement (e.g. tokens / window: the
    level's throughput); empty with fewer than two repeats (nothing to resample)."""
    r = len(numerators)
    if r < 2:
        return np.empty(0)
    pick = np.random.default_rng(seed).integers(0, r, (resamples, r))
    den = np.asarray(denominators, dtype=float)[pick].sum(axis=1)
    num = np.asarray(numerators, dtype=float)[pick].sum(axis=1)
    out: Floats = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return out


def ci_of(value: float, resampled: Floats, lower: float | None = 0.0) -> Ci:
    """The percentile interval of `resampled`, widened to hold `value`, never below `lower`
    (None: no bound, e.g. a difference)."""
    tail = (1.0 - CONFIDENCE) / 2 * 100
    lo, hi = (float(x) for x in np.percentile(resampled, [tail, 100 - tail]))
    lo, hi = min(lo, value), max(hi, value)
    if lower is not None:
        lo = max(lo, min(lower, value))
    return Ci(value, lo, hi)


def cv_of(values: Sequence[float]) -> float | None:
    """Coefficient of variation (sample std / mean) of the repeats' values; None with
    fewer than two or a zero mean."""
    a = np.asarray([v for v in values if v is not None], dtype=float)
    if len(a) < 2 or a.mean() == 0:
        return None
    return float(a.std(ddof=1) / abs(a.mean()))


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile: the value below which a share `p` of the distribution lies,
    with `df` degrees of freedom (df >= 1); scipy's, imported here, when first needed."""
    if df < 1:
        raise ValueError(f"t needs at least 1 degree of freedom, not {df}")
    from scipy.stats import t

    return float(t.ppf(p, df))


def t_975(df: int) -> float:
    """Student's t 97.5th percentile with `df` degrees of freedom (12.706 at 1, 2.042 at 30:
    the normal's 1.960 would be 4 % narrower there)."""
    return t_quantile(0.975, df)


def pi_factor(repeats: int) -> float:
    """The prediction interval's half-width in sample standard deviations for R repeats:
    t(0.975, R-1) x sqrt(1 + 1/R) (R = 2: 15.56, 3: 4.97, 5: 3.04, 10: 2.37)."""
    return t_975(repeats - 1) * math.sqrt(1.0 + 1.0 / repeats)


def prediction_interval(
    values: Sequence[float | None], lower: float | None = 0.0
) -> tuple[float, float] | None:
    """95 % prediction interval for one more repeat, from each repeat's value of the
    statistic: mean +- t(0.975, R-1) x s x sqrt(1 + 1/R). None with fewer than two values
    (one run gives no spread to predict from). Never below `lower` (no time or rate is
    negative; None: no bound)."""
    a = np.asarray([v for v in values if v is not None], dtype=float)
    if len(a) < 2:
        return None
    mean, half = float(a.mean()), pi_factor(len(a)) * float(a.std(ddof=1))
    low = mean - half if lower is None else max(mean - half, lower)
    return low, mean + half
