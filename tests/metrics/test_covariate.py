"""The machine canary as a fitted covariate (metrics/covariate.py, CUPED): on synthetic
pairs, a metric that moves with the covariate loses the expected share of its variance;
an unrelated covariate changes nothing."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from inferlab.metrics.covariate import at_zero, cuped, slope_beyond_chance


def _pairs(n: int, slope: float, noise_sd: float, seed: int) -> tuple[list[float], list[float]]:
    rng = np.random.default_rng(seed)
    canary = rng.standard_normal(n)
    metric = 10.0 + slope * canary + noise_sd * rng.standard_normal(n)
    return metric.tolist(), canary.tolist()


def test_a_metric_that_follows_the_canary_loses_the_share_it_explains() -> None:
    # metric = 0.8 x canary + noise, var(canary) 1, var(noise) 0.16: the canary explains
    # 0.64 / 0.80 = 80 % of the metric's variance
    metric, canary = _pairs(4000, 0.8, 0.4, seed=1)
    adj = cuped(metric, canary)
    assert adj.applied and adj.theta == pytest.approx(0.8, abs=0.02)
    assert adj.reduction == pytest.approx(0.8, abs=0.02)
    assert adj.variance_before == pytest.approx(0.8, rel=0.05)
    assert adj.variance_after == pytest.approx(0.16, rel=0.06)
    assert statistics.fmean(adj.values) == pytest.approx(statistics.fmean(metric))  # mean kept
    assert adj.why.startswith("theta 0.79") and "removed 80 % of the variance" in adj.why


def test_a_few_blocks_still_gain() -> None:
    metric, canary = _pairs(12, 0.8, 0.4, seed=3)  # a paired run's dozen blocks
    adj = cuped(metric, canary)
    assert adj.applied and adj.reduction > 0.5


def test_an_unrelated_canary_changes_nothing() -> None:
    # 400 runs of 40 pairs, the canary drawn apart from the metric: the fit is kept only
    # where its slope passes a 5 % test, so in about 5 % of them (by chance), never more
    kept = 0
    for seed in range(400):
        metric, _ = _pairs(40, 0.0, 1.0, seed=seed)
        canary = np.random.default_rng(1000 + seed).standard_normal(40).tolist()
        adj = cuped(metric, canary)
        kept += adj.applied
        if not adj.applied:
            assert adj.values == tuple(metric) and adj.reduction == 0.0
            assert adj.variance_after == adj.variance_before
            assert adj.why.endswith(
                "no more than an unrelated one would by chance: metric unchanged"
            )
    assert kept / 400 == pytest.approx(0.05, abs=0.025)


def test_it_never_adds_variance_nor_fits_on_nothing() -> None:
    assert cuped([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]).why.startswith("3 pair(s)")  # too few
    flat = cuped([1.0, 2.0, 3.0, 4.0], [5.0] * 4)
    assert not flat.applied and "the covariate does not vary" in flat.why
    for seed in range(20):
        metric, canary = _pairs(10, 0.3, 1.0, seed=seed)
        adj = cuped(metric, canary)
        assert adj.variance_after <= adj.variance_before
    with pytest.raises(ValueError, match="3 metric values against 2"):
        cuped([1.0, 2.0, 3.0], [1.0, 2.0])


def test_the_slope_test() -> None:
    assert not slope_beyond_chance(0.3, 10)  # t 0.89 < t(0.975, 8) 2.306
    assert slope_beyond_chance(0.7, 10)  # t 2.77
    assert not slope_beyond_chance(1.0, 2) and slope_beyond_chance(1.0, 3)


def test_at_zero_is_the_fitted_lines_intercept() -> None:
    x = [0.10, 0.02, 0.07, -0.01, 0.05, 0.12]  # the machine slower for B in most pairs
    noise = [0.004, -0.003, 0.001, 0.002, -0.004, 0.0]
    y = [0.05 + 0.8 * c + e for c, e in zip(x, noise, strict=True)]
    z = at_zero(y, x)
    assert z.fit.applied and z.df == 4
    # numpy's least squares: the intercept and its standard error
    design = np.column_stack([np.ones(6), x])
    coef, ss, *_ = np.linalg.lstsq(design, y, rcond=None)
    cov = ss[0] / 4 * np.linalg.inv(design.T @ design)
    assert z.mean == pytest.approx(coef[0]) and z.se == pytest.approx(math.sqrt(cov[0, 0]))
    # the sample mean keeps the machine's imbalance (mean x 0.058 -> +0.046); at zero, gone
    assert statistics.fmean(y) == pytest.approx(0.0965, abs=1e-3)
    assert z.mean == pytest.approx(0.05, abs=0.005)


def test_at_zero_without_a_fit_is_the_plain_mean() -> None:
    z = at_zero([0.01, 0.03, 0.02, 0.04], [0.5, -0.5, -0.5, 0.5])
    assert not z.fit.applied and z.df == 3
    assert z.mean == pytest.approx(0.025)
    assert z.se == pytest.approx(statistics.stdev([0.01, 0.03, 0.02, 0.04]) / 2)
