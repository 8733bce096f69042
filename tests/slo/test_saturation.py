"""The saturation verdict's thresholds and its inputs, on numbers the test sets."""

from __future__ import annotations

import pytest

from inferlab.slo.saturation import (
    completed_rate_per_s,
    queue_growth_per_s,
    saturation,
    verdict,
)


@pytest.mark.parametrize(
    ("completed", "growth", "expected"),
    [
        (10.0, 0.0, "stable"),
        (9.5, 0.2, "stable"),  # growth within 2 % of offered is flat
        (9.4, 0.0, "backlogged"),
        (10.0, 0.5, "backlogged"),  # growing, but not past 10 % of offered
        (8.0, 0.0, "backlogged"),
        (7.9, 0.0, "overloaded"),
        (10.0, 1.1, "overloaded"),
    ],
)
def test_thresholds(completed: float, growth: float, expected: str) -> None:
    assert verdict(10.0, completed, growth) == expected


def test_completed_rate_over_the_completions_span() -> None:
    # A stable level: completions are arrivals (10/s) shifted by a 5 s latency.
    ends = [5.0 + i / 10 for i in range(64)]
    assert completed_rate_per_s(ends) == pytest.approx(10.0)


def test_queue_growth_is_the_fitted_slope() -> None:
    t = [0.0, 1.0, 2.0, 3.0]
    assert queue_growth_per_s(t, [0, 2, 4, 6]) == pytest.approx(2.0)
    assert queue_growth_per_s([1.0], [3]) is None


def test_overloaded_block_says_its_percentiles_grow() -> None:
    ends = [i / 5 for i in range(50)]  # 5/s completed of 10/s offered
    s = saturation(10.0, ends, ([0.0, 10.0], [0, 50]), "simulator_queue")
    d = s.to_json()
    assert d["verdict"] == "overloaded" and d["queue_growth_per_s"] == pytest.approx(5.0)
    assert "grow with the run's length" in d["latency_note"] and "95%" in d["thresholds"]
    assert saturation(10.0, ends, None, "server_waiting").queue_source == "none"
