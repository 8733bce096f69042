"""A covariate fitted on the run itself (CUPED, Deng et al., WSDM 2013): a metric measured
beside something that moves with the machine (the machine canary, bench/machine_canary.py)
loses the part of its variance that the covariate explains.

    cuped(metric: Sequence[float], covariate: Sequence[float]) -> Adjusted

`metric[i]` and `covariate[i]` are one pair: a block's (or a level's) metric value, e.g. a
paired block's log-ratio B/A or a level's TPOT p50, and the machine canary's reading taken
beside that block (e.g. its matmul_ms + read_ms, or their ratio B/A). The fit:

    theta = cov(metric, covariate) / var(covariate)
    adjusted[i] = metric[i] - theta x (covariate[i] - mean(covariate))

The adjusted values keep the metric's mean (the covariate's deviations sum to zero) and
lose its variance share rho^2, rho the pairs' correlation. It can only remove variance:
theta is fitted on the same values, so a covariate unrelated to the metric would still
"explain" about 1/(n-1) of it by chance; the fit is kept only where its slope is beyond
that (|t| = |rho| x sqrt((n-2)/(1-rho^2)) above t(0.975, n-2), the usual test of a fitted
slope), else the metric comes back unchanged and `why` says so. An interval over the
adjusted values should count one degree of freedom fewer (theta was fitted on them).

`Adjusted.values` are the values to use; `variance_before` / `variance_after` their
sample variances (n-1), `reduction` = 1 - after / before (0 when not applied).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.metrics.intervals import t_975

MIN_PAIRS = 4  # a slope from fewer than 4 pairs has 1 degree of freedom: nothing to trust


@dataclass(frozen=True, slots=True)
class Adjusted:
    """The metric after the fitted covariate (or unchanged, `applied` False and `why`)."""

    values: tuple[float, ...]
    theta: float  # the fitted slope (0.0 where not applied)
    correlation: float  # rho between metric and covariate (0.0 where undefined)
    variance_before: float  # sample variance (n-1) of the metric
    variance_after: float  # of `values`
    applied: bool
    why: str

    @property
    def reduction(self) -> float:
        """The share of the variance removed: 1 - after / before (0.0 with no variance)."""
        if self.variance_before <= 0:
            return 0.0
        return 1.0 - self.variance_after / self.variance_before


def _unchanged(metric: Sequence[float], rho: float, why: str) -> Adjusted:
    var = statistics.variance(metric) if len(metric) >= 2 else 0.0
    return Adjusted(tuple(metric), 0.0, rho, var, var, False, why)


def slope_beyond_chance(rho: float, n: int) -> bool:
    """Whether a slope fitted on n pairs with correlation rho is beyond what an unrelated
    covariate shows by chance: |t| = |rho| sqrt((n-2)/(1-rho^2)) > t(0.975, n-2)."""
    if n < 3:
        return False
    if abs(rho) >= 1.0:
        return True
    t = abs(rho) * math.sqrt((n - 2) / (1.0 - rho * rho))
    return t > t_975(n - 2)


def cuped(metric: Sequence[float], covariate: Sequence[float]) -> Adjusted:
    """The metric less the part the covariate explains, theta fitted on these pairs; the
    metric unchanged where the fit would not remove variance beyond chance (module doc)."""
    if len(metric) != len(covariate):
        raise ValueError(f"{len(metric)} metric values against {len(covariate)} covariates")
    n = len(metric)
    if n < MIN_PAIRS:
        return _unchanged(metric, 0.0, f"{n} pair(s): a fit needs at least {MIN_PAIRS}")
    var_m, var_c = statistics.variance(metric), statistics.variance(covariate)
    if var_c <= 0 or var_m <= 0:
        side = "the covariate" if var_c <= 0 else "the metric"
        return _unchanged(metric, 0.0, f"{side} does not vary: nothing to fit")
    cov = statistics.covariance(metric, covariate)
    rho = cov / math.sqrt(var_m * var_c)
    if not slope_beyond_chance(rho, n):
        why = (
            f"the covariate explains {rho * rho * 100:.0f} % of the metric's variance over "
            f"{n} pairs, no more than an unrelated one would by chance: metric unchanged"
        )
        return _unchanged(metric, rho, why)
    theta = cov / var_c
    mean_c = statistics.fmean(covariate)
    values = tuple(m - theta * (c - mean_c) for m, c in zip(metric, covariate, strict=True))
    var_after = statistics.variance(values)
    why = f"theta {theta:.4g} fitted on {n} pairs removed {(1 - var_after / var_m) * 100:.0f} %"
    return Adjusted(values, theta, rho, var_m, var_after, True, why + " of the variance")


@dataclass(frozen=True, slots=True)
class AtZero:
    """The metric where the covariate is 0 (the fitted line's intercept), its standard
    error and degrees of freedom, and the fit (`fit.applied` False: not fitted, and the
    mean and standard error are the metric's own over n-1)."""

    mean: float
    se: float
    df: int
    fit: Adjusted


def at_zero(metric: Sequence[float], covariate: Sequence[float]) -> AtZero:
    """The metric's mean had the covariate been 0, where its true mean is known to be 0 (a
    paired run's ln(machine B/A): the blocks are assigned in a balanced random order, so
    the machine favours neither side). The line metric = alpha + theta x covariate by
    least squares: mean = alpha, se = s sqrt(1/n + mean(c)^2 / Sxx), s^2 the residuals'
    sum of squares over n-2. Centring on the sample mean instead (`cuped`) would keep the
    machine's chance imbalance between the sides in the mean while its interval shrank: an
    A/A run would then cry wolf in half the runs. Fitted only where `cuped` keeps its
    slope (beyond chance), else the plain mean and its standard error."""
    n = len(metric)
    fit = cuped(metric, covariate)
    m = statistics.fmean(metric) if n else math.nan
    if not fit.applied:
        se = math.sqrt(fit.variance_before / n) if n >= 2 else math.nan
        return AtZero(m, se, n - 1, fit)
    mean_c = statistics.fmean(covariate)
    sxx = sum((c - mean_c) ** 2 for c in covariate)
    alpha = m - fit.theta * mean_c
    ss = sum((y - alpha - fit.theta * c) ** 2 for y, c in zip(metric, covariate, strict=True))
    s = math.sqrt(ss / (n - 2))
    return AtZero(alpha, s * math.sqrt(1.0 / n + mean_c * mean_c / sxx), n - 2, fit)
