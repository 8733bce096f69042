from __future__ import annotations

import pytest

from inferlab import units
from inferlab.errors import UnitError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16GB", 16e9),
        ("16 GiB", 16 * 2**30),
        ("128KiB", 131072),
        ("500MB", 5e8),
        ("1024", 1024.0),
        ("0.5 TB", 5e11),
    ],
)
def test_bytes(text: str, expected: float) -> None:
    assert units.parse_bytes(text) == pytest.approx(expected)


def test_rates_flops_times() -> None:
    assert units.parse_bandwidth("3.35TB/s") == pytest.approx(3.35e12)
    assert units.parse_bandwidth("900 GiB/s") == pytest.approx(900 * 2**30)
    assert units.parse_flops("989TFLOPS") == pytest.approx(9.89e14)
    assert units.parse_flops("1.2 PFLOP/s") == pytest.approx(1.2e15)
    assert units.parse_time("14ms") == pytest.approx(0.014)
    assert units.parse_time("4us") == pytest.approx(4e-6)
    assert units.parse_time("10min") == pytest.approx(600)
    assert units.parse_count("8B") == pytest.approx(8e9)
    assert units.parse_rate("5/s") == pytest.approx(5)
    assert units.parse_rate("300/min") == pytest.approx(5)


@pytest.mark.parametrize("bad", ["16GX", "GB", "3.35TB/s", "fast", "1.2.3GB"])
def test_bad_bytes_names_accepted_forms(bad: str) -> None:
    with pytest.raises(UnitError, match="write it like 16GB"):
        units.parse_bytes(bad)


def test_bad_bandwidth_and_time() -> None:
    with pytest.raises(UnitError, match="3.35TB/s"):
        units.parse_bandwidth("3.35TB")
    with pytest.raises(UnitError, match="14ms"):
        units.parse_time("14 parsecs")


def test_format_carries_units() -> None:
    assert units.fmt_bytes(16.54e9) == "16.54 GB"
    assert units.fmt_time(4.936e-3) == "4.936 ms"
    assert units.fmt_bandwidth(1.383e12) == "1.383 TB/s"


def test_a_typed_duration_needs_its_unit() -> None:
    """'50' could be ms or s: a bare number is refused where a user types a time (0 needs
    no unit), naming the units; parse_time (files, traces) keeps reading it as seconds."""
    assert units.parse_duration("50ms") == pytest.approx(0.05)
    assert units.parse_duration("0") == 0.0
    with pytest.raises(units.UnitError, match=r"'50' has no unit; .*units: ns, us, ms, s"):
        units.parse_duration("50")
    assert units.parse_time("50") == 50.0
