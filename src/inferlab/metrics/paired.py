"""B against A measured in block pairs: the ratio, its interval, the verdict, and the
smallest change the run could have found.

A paired run (bench --url A --url B) measures A and B in short blocks side by side in
time, so each pair of blocks saw the same stretch of the machine. Per pair, r_i = B/A
of a block statistic (TPOT p50, TTFT p50, output tok/s); with d_i = ln r_i over n pairs,
mean m and sample standard deviation s:

    ratio = exp(m)                          (the geometric mean of the pairs' ratios)
    ci95  = exp(m -+ t(1 - 0.025/k, n-1) s / sqrt(n))
    detectable change = exp((t(1 - 0.025/k, n-1) + t(0.80, n-1)) s / sqrt(n)) - 1

the last being the change a two-sided paired t-test finds 80 % of the time with this
run's spread and pairs (the usual power approximation, t in place of z). k is the number
of comparisons the run makes (levels x quantities x endpoints against the baseline): each
interval is at 1 - 0.05/k (Bonferroni), so that a run of an unchanged server says
`within_noise` on every one of them at least 95 % of the time. At 5 % each, a run of 3
levels x 3 quantities would cry wolf somewhere one time in three. Logs make the
interval symmetric in "B is 10 % slower" and "A is 10 % slower", and the t interval
assumes the pairs' log-ratios are roughly normal, which block statistics (medians of
several requests) are. The drift of the machine over a run is shared by both blocks of a
pair and cancels in their ratio; what is left is the noise between neighbouring blocks.

With the machine canary read after every block (x_i = ln of its B/A per pair), that
noise loses the part the machine explains: m and its standard error are the intercept
of the line d = m + theta x fitted to the pairs (metrics/covariate.py's at_zero: B/A had
the machine been as fast for both blocks; kept only where the slope is beyond chance),
and the t quantiles count n-2 degrees of freedom.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.metrics.covariate import Adjusted, at_zero
from inferlab.metrics.intervals import t_quantile
from inferlab.summary import CovariateFit, PairedQuantity, PairedVerdict

METHOD = (
    "ratio B/A per block pair (A's and B's blocks of one round: adjacent, in an order-"
    "balanced, randomized sequence); ratio = exp(mean "
    "of ln(B/A)); ci95 = exp(mean -+ t(1 - 0.025/k, n-1) x s / sqrt(n)), s the pairs' "
    "sample standard deviation of ln(B/A), k the run's comparisons (Bonferroni: 95 % for "
    "all of them together); within_noise where ci95 holds 1; "
    "detectable_change_80pct_power = exp((t(1 - 0.025/k, n-1) + t(0.80, n-1)) x s / "
    "sqrt(n)) - 1; where machine_covariate is applied, ln(B/A) is first adjusted on "
    "ln(machine canary B/A) after the pair's blocks (CUPED) and n-1 above reads n-2"
)
THROUGHPUT = "output_tokens_per_s_total"  # higher is faster; every other quantity is a time


@dataclass(frozen=True, slots=True)
class PairedRatio:
    """B/A over n block pairs: the geometric mean, its 95 % interval and the smallest
    change findable at 80 % power (None for both with fewer than two pairs), and the
    machine canary's fit where one was given."""

    ratios: tuple[float, ...]
    ratio: float | None
    ci95: tuple[float, float] | None
    detectable_change: float | None
    covariate: Adjusted | None = None

    @property
    def pairs(self) -> int:
        return len(self.ratios)


def paired_ratio(
    a: Sequence[float | None],
    b: Sequence[float | None],
    family: int = 1,
    covariate: Sequence[float | None] | None = None,
) -> PairedRatio:
    """B/A over the pairs (a[i], b[i]); a pair missing a side, or not above 0, is left out.
    `family`: the run's comparisons, k (the interval at 1 - 0.05/k). `covariate[i]`: the
    pair's ln(machine B/A), fitted where every kept pair has one (module doc)."""
    cov = covariate if covariate is not None else [None] * len(a)
    kept = [
        (y / x, c)
        for x, y, c in zip(a, b, cov, strict=True)
        if x is not None and y is not None and _usable(x) and _usable(y)
    ]
    ratios = tuple(r for r, _ in kept)
    n = len(ratios)
    if n == 0:
        return PairedRatio(ratios, None, None, None)
    logs = [math.log(r) for r in ratios]
    m = sum(logs) / n
    if n < 2:
        return PairedRatio(ratios, math.exp(m), None, None)
    xs = [c for _, c in kept if c is not None]
    z = at_zero(logs, xs) if covariate is not None and len(xs) == n else None
    fit = None if z is None else z.fit
    if z is not None and z.fit.applied:
        m, se, df = z.mean, z.se, z.df
    else:
        s = math.sqrt(sum((x - m) ** 2 for x in logs) / (n - 1))
        se, df = s / math.sqrt(n), n - 1
    t = t_quantile(1.0 - 0.025 / max(family, 1), df)
    ci = (math.exp(m - t * se), math.exp(m + t * se))
    detectable = math.exp((t + t_quantile(0.80, df)) * se) - 1.0
    return PairedRatio(ratios, math.exp(m), ci, detectable, fit)


def _usable(x: float) -> bool:
    return math.isfinite(x) and x > 0.0


def verdict_of(r: PairedRatio, lower_is_better: bool) -> PairedVerdict:
    """slower / faster where the interval excludes 1 (a time up, or a throughput down, is
    slower); within_noise where it holds 1 or there is no interval."""
    if r.ci95 is None or r.ci95[0] <= 1.0 <= r.ci95[1]:
        return "within_noise"
    up = r.ci95[0] > 1.0
    return "slower" if up == lower_is_better else "faster"


@dataclass(frozen=True, slots=True)
class QuantityBlocks:
    """One quantity of one level: each side's value over the level, and per block pair."""

    quantity: str
    a: float | None
    b: float | None
    a_blocks: tuple[float | None, ...]
    b_blocks: tuple[float | None, ...]
    machine: tuple[float | None, ...] | None = None  # ln(machine canary B/A) per pair
    machine_why: str | None = None  # where `machine` is None though the run read it: why


def paired_quantity(q: QuantityBlocks, family: int = 1) -> PairedQuantity:
    """The summary's block for one quantity, B against A over the block pairs, one of the
    run's `family` comparisons."""
    r = paired_ratio(q.a_blocks, q.b_blocks, family, q.machine)
    fit = r.covariate
    return PairedQuantity(
        quantity=q.quantity,
        a=q.a,
        b=q.b,
        ratio=r.ratio,
        ci95=r.ci95,
        verdict=verdict_of(r, q.quantity != THROUGHPUT),
        detectable_change_80pct_power=r.detectable_change,
        block_ratios=r.ratios,
        machine_covariate=covariate_fit(fit) if fit is not None else _unfitted(r, q.machine_why),
    )


def _unfitted(r: PairedRatio, why: str | None) -> CovariateFit | None:
    return (
        None
        if why is None
        else CovariateFit(
            pairs=r.pairs, correlation=0.0, variance_removed=0.0, applied=False, why=why
        )
    )


def covariate_fit(fit: Adjusted) -> CovariateFit:
    return CovariateFit(
        pairs=len(fit.values),
        correlation=fit.correlation,
        variance_removed=fit.reduction,
        applied=fit.applied,
        why=fit.why,
    )


def slower_by(q: PairedQuantity) -> float:
    """How much slower B is as a share of A (negative: faster): B/A - 1 for a time, and
    1 - B/A for throughput (tok/s 100 -> 90 is 0.10 slower)."""
    if q.ratio is None:
        return 0.0
    return q.ratio - 1.0 if q.quantity != THROUGHPUT else 1.0 - q.ratio
