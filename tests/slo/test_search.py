"""The max-load search on levels whose answer the test knows: exact, bounded, and honest
about the three ways it can end without one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from inferlab.slo.attainment import SloLevel, evaluate
from inferlab.slo.grammar import parse_slo
from inferlab.slo.outcome import Outcome
from inferlab.slo.search import SearchSpec, find_max_load

SLO = parse_slo("tpot_p99=50ms")


def level(tpot_s: float, n: int = 20) -> SloLevel:
    outs = [Outcome(True, i, i + 1.0, 10, 0.1, tpot_s, 1.0, tpot_s, 0.1) for i in range(n)]
    return evaluate(SLO, outs)


def linear(per_stream_s: float) -> tuple[list[float], Callable[[float], SloLevel]]:
    tried: list[float] = []

    def measure(c: float) -> SloLevel:
        tried.append(c)
        return level(per_stream_s * c)

    return tried, measure


def test_finds_the_known_concurrency_exactly() -> None:
    tried, measure = linear(0.004)  # 4 ms per open stream: 12 -> 48 ms, 13 -> 52 ms
    result = find_max_load(measure, SearchSpec("concurrency"))
    assert result.value == 12 and result.status == "found"
    assert (
        result.message == "max concurrency within the SLO: 12 (13 breaks tpot_p99: 52 ms > 50 ms)"
    )
    assert result.binding_objective == "tpot_p99"
    assert len(tried) <= 8 and tried[:5] == [1, 2, 4, 8, 16]
    assert len(result.levels_tried) == len(tried)


@pytest.mark.parametrize("knee", [1, 2, 3, 5, 7, 12, 31, 100])
def test_a_step_function_is_found_within_the_budget(knee: int) -> None:
    def measure(c: float) -> SloLevel:  # flat margins: interpolation alone would crawl
        return level(0.010 if c <= knee else 0.100)

    result = find_max_load(measure, SearchSpec("concurrency", max_levels=14))
    assert result.value == knee and result.status == "found"


def test_the_answer_is_measured_never_interpolated() -> None:
    result = find_max_load(
        lambda r: level(0.0173 * r), SearchSpec("rate", start=1.0, max_levels=12)
    )
    assert result.value is not None and result.value <= 50 / 17.3 * (1 + 1e-9)
    assert result.value >= 50 / 17.3 / 1.05  # resolved to 5 %
    measured = {p.value for p in result.levels_tried if p.passed}
    assert result.value == max(measured)


def test_lowest_level_already_fails() -> None:
    tried, measure = linear(0.060)
    result = find_max_load(measure, SearchSpec("concurrency"))
    assert result.value is None and result.status == "none_meets" and tried == [1]
    assert "the lowest tried, concurrency 1, already fails" in result.message
    assert "tpot_p99: 60 ms > 50 ms" in result.message  # the best level's numbers


def test_highest_still_passes_says_what_to_raise() -> None:
    tried, measure = linear(0.0001)
    result = find_max_load(measure, SearchSpec("concurrency", max_levels=4))
    assert tried == [1, 2, 4, 8] and result.value == 8 and result.status == "bound_not_found"
    assert "raise --search-max-levels (now 4)" in result.message
    capped = find_max_load(measure, SearchSpec("concurrency", upper=6))
    assert capped.value == 6 and "the highest load searched (6)" in capped.message


def test_levels_exhausted_keeps_the_measured_answer() -> None:
    tried, measure = linear(0.004)
    result = find_max_load(measure, SearchSpec("concurrency", max_levels=6))
    assert result.status == "levels_exhausted" and "raise it" in result.message
    assert result.value == max(v for v in tried if v * 0.004 <= 0.05)


def test_a_rate_knee_is_resolved_to_five_percent() -> None:
    tried: list[float] = []

    def measure(rate: float) -> SloLevel:  # flat margins either side of 7.3/s
        tried.append(rate)
        return level(0.010 if rate <= 7.3 else 0.200)

    result = find_max_load(measure, SearchSpec("rate", start=2.0, max_levels=10))
    assert result.status == "found" and result.value is not None
    assert 7.3 / 1.05 <= result.value <= 7.3
    assert tried[:3] == [2.0, 4.0, 8.0] and len(tried) <= 8
