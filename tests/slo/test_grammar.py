"""The --slo grammar: per-request and level objectives, units, and its one-line refusals."""

from __future__ import annotations

import pytest

from inferlab.commands.flags.names import said
from inferlab.errors import InferlabError, UnitError
from inferlab.slo.grammar import LevelObjective, RequestObjective, parse_slo


def test_per_request_and_level_objectives() -> None:
    slo = parse_slo("ttft=500ms,tpot=50ms,e2e=20s,itl_max=200ms,ttfo=2s,ttft_p99=1s,tpot_p90=40ms")
    assert slo.per_request == (
        RequestObjective("ttft", 0.5),
        RequestObjective("tpot", 0.05),
        RequestObjective("e2e", 20.0),
        RequestObjective("itl_max", 0.2),
        RequestObjective("ttfo", 2.0),
    )
    assert slo.per_level == (
        LevelObjective("ttft", "p99", 1.0),
        LevelObjective("tpot", "p90", 0.04),
    )
    assert [o.name for o in slo.per_level] == ["ttft_p99", "tpot_p90"]
    assert slo.min_attainment == 0.9


def test_unknown_objective_lists_the_accepted_ones() -> None:
    with pytest.raises(InferlabError) as e:
        parse_slo("latency=1s")
    msg = str(e.value)
    assert "'latency'" in msg and "ttft, tpot, e2e, itl_max, ttfo" in msg and "p99" in msg
    assert "\n" not in msg


def test_a_unit_that_does_not_fit() -> None:
    with pytest.raises(UnitError, match=r"ttft=50tok: ttft is a time"):
        parse_slo("ttft=50tok")


@pytest.mark.parametrize("text", ["ttft", "ttft=", "=1s", "ttft=0s", "ttft=-1s", "ttft=1s,ttft=2s"])
def test_malformed(text: str) -> None:
    with pytest.raises(InferlabError) as e:
        parse_slo(text)
    assert said(e.value).startswith("--slo") and str(e.value).startswith("slo")  # a field


def test_min_attainment_must_be_a_fraction() -> None:
    with pytest.raises(InferlabError) as e:
        parse_slo("ttft=1s", 1.5)
    assert said(e.value).startswith("--min-attainment 1.5: give a fraction in (0, 1]")
