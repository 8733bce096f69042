"""pi95, where one more run of a level lands (metrics/intervals.py, metrics/repeats.py): the
t quantiles it uses, its half-width factor, its coverage on repeats whose truth is known,
and its place in a level's intervals beside ci95 (wider; absent with one repeat)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from inferlab.metrics.intervals import pi_factor, prediction_interval, t_975
from inferlab.metrics.level_summary import summarize_level
from inferlab.metrics.repeats import level_uncertainty, pooled
from inferlab.records import RequestRecord
from inferlab.summary import LevelSummary

TOKENS = 11


def test_t_quantiles_are_the_tables() -> None:
    """Student's t 97.5th percentiles as every table prints them; past df 30 the corrected
    normal quantile stays within 1e-3 of them (df 40: 2.021, 60: 2.000, 120: 1.980)."""
    printed = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 9: 2.262, 10: 2.228, 30: 2.042}
    for df, t in printed.items():
        assert t_975(df) == pytest.approx(t, abs=6e-4)
    for df, t in {40: 2.021, 60: 2.000, 120: 1.980}.items():
        assert t_975(df) == pytest.approx(t, abs=1e-3)
    assert all(t_975(df) > t_975(df + 1) for df in range(1, 100))  # narrower with more
    with pytest.raises(ValueError):
        t_975(0)


def test_the_half_width_factor_for_the_usual_repeats() -> None:
    """t(0.975, R-1) x sqrt(1 + 1/R): R = 3 is 2.1x R = 10's, and 2.5x the known-sigma 1.96."""
    got = {r: round(pi_factor(r), 2) for r in (2, 3, 5, 10)}
    assert got == {2: 15.56, 3: 4.97, 5: 3.04, 10: 2.37}
    assert pi_factor(3) / pi_factor(10) == pytest.approx(2.09, abs=0.01)
    assert pi_factor(3) / 1.959964 == pytest.approx(2.53, abs=0.01)


def test_the_interval_by_hand_none_with_one_value_and_never_below_zero() -> None:
    lo, hi = prediction_interval([10.0, 12.0, 14.0]) or (0.0, 0.0)
    half = 4.302653 * 2.0 * math.sqrt(4 / 3)  # t(0.975, 2) x s x sqrt(1 + 1/3), s = 2
    assert (lo, hi) == (pytest.approx(12.0 - half), pytest.approx(12.0 + half))
    assert prediction_interval([5.0]) is None and prediction_interval([]) is None
    assert prediction_interval([5.0, None]) is None  # a repeat without the statistic
    clipped, free = prediction_interval([0.1, 1.0]), prediction_interval([0.1, 1.0], lower=None)
    assert clipped is not None and clipped[0] == 0.0  # no time or rate below 0
    assert free is not None and free[0] < 0


@pytest.mark.parametrize("repeats", [2, 3, 5, 10])
def test_the_next_run_lands_inside_about_95_percent_of_the_time(repeats: int) -> None:
    """Normal run-to-run values (the machine's drift), 4000 trials of R repeats and one run
    more, seeded: the next run lands inside pi95 in 94-96 % of them (exact for normal
    values), and inside an interval of mean +- 1.96 s (no t, no sqrt(1 + 1/R)) far less
    often where R is small."""
    rng = np.random.default_rng(repeats)
    runs = rng.normal(50.0, 2.0, (4000, repeats + 1))
    inside = naive = 0
    for row in runs:
        lo, hi = prediction_interval(list(row[:-1])) or (0.0, 0.0)
        inside += lo <= row[-1] <= hi
        m, s = row[:-1].mean(), row[:-1].std(ddof=1)
        naive += abs(row[-1] - m) <= 1.96 * s
    assert 0.94 <= inside / len(runs) <= 0.96
    if repeats <= 3:
        assert naive / len(runs) < 0.85


Level = tuple[list[list[RequestRecord]], LevelSummary, list[LevelSummary]]


def _level(seed: int, repeats: int, drift: float) -> Level:
    """A c=1 level of `repeats` x 16 requests back to back, TPOT 10 ms x each repeat's
    machine speed (normal, `drift`) x 3 % per request; its repeats and its pooled summary."""
    rng = np.random.default_rng(seed)
    groups: list[list[RequestRecord]] = []
    parts: list[LevelSummary] = []
    t = 1_000_000_000
    for rep in range(repeats):
        speed, group = 1 + rng.normal(0, drift), []
        for i in range(16):
            step = int(10e6 * speed * rng.lognormal(0, 0.03))
            r = RequestRecord(100 * rep + i, "c=1", "measure", 16, TOKENS, repeat=rep)
            r.event_ns = [t + 20_000_000 + k * step for k in range(TOKENS)]
            r.send_ns, r.http_status, r.event_tokens = t, 200, [1] * TOKENS
            r.completion_tokens = TOKENS
            group.append(r)
            t = r.event_ns[-1] + 1_000_000
        groups.append(group)
        parts.append(summarize_level("c=1", "concurrency", 1.0, group, 5.0))
    every = [r for g in groups for r in g]
    combined = pooled(summarize_level("c=1", "concurrency", 1.0, every, 5.0), parts)
    return groups, combined, parts


def test_a_repeated_level_has_pi95_beside_ci95_and_one_repeat_has_none() -> None:
    """Three repeats drifting 5 %: each percentile's and tok/s's pi95 is the formula over the
    repeats' own values, and wider than its ci95 (the next run moves with the machine; the
    long-run value less). One repeat: no pi95 at all."""
    groups, combined, parts = _level(7, 3, 0.05)
    u = level_uncertainty(groups, combined, parts)
    assert u is not None and u.repeats == 3
    tpot = u.of("tpot_s.p50")
    assert tpot is not None and tpot.pi95 is not None
    per = [p.tpot_s.p50 for p in parts]
    assert tpot.pi95 == pytest.approx(prediction_interval(per))
    assert tpot.pi95[1] - tpot.pi95[0] > tpot.ci95[1] - tpot.ci95[0]
    tput = u.of("output_tokens_per_s_total")
    assert tput is not None and tput.pi95 == pytest.approx(
        prediction_interval([p.output_tokens_per_s_total for p in parts])
    )
    assert all(iv.pi95 is not None for iv in u.intervals)
    alone = level_uncertainty(*_level(7, 1, 0.05))
    assert alone is not None and all(iv.pi95 is None for iv in alone.intervals)
    assert "pi95" not in alone.intervals[0].to_json()
