"""Durations print as people read them: ms below 10 s, s from 10 s, min from 10 min."""

from __future__ import annotations

import pytest

from inferlab.units import fmt_duration, fmt_time


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.052, "52 ms"),
        (9.9994, "9999 ms"),
        (10.0, "10 s"),
        (135.5472, "135.5 s"),
        (599.0, "599 s"),
        (600.0, "10 min"),
        (1356.0, "22.6 min"),
        (0.0, "0 ms"),
    ],
)
def test_fmt_duration(seconds: float, text: str) -> None:
    assert fmt_duration(seconds) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1.48, "1480 ms"), (2.9531, "2953 ms"), (0.01834, "18.3 ms"), (0.214, "214 ms")],
)
def test_fmt_duration_never_writes_an_exponent(seconds: float, text: str) -> None:
    """Three significant digits of 1480 ms read '1480 ms', not '1.48e+03 ms' (the demo's
    predicted TTFTs printed that way)."""
    assert fmt_duration(seconds, 3) == text


def test_fmt_time_switches_to_minutes_at_ten() -> None:
    assert fmt_time(599.0) == "599 s" and fmt_time(1356.0) == "22.6 min"
    assert fmt_time(0.014) == "14 ms"
