"""Answers with units, as people write them; the deck's own numbers graded."""

from __future__ import annotations

import pytest

from inferlab.drill.cards import Alternate, Card, Inputs, Mistake, Quantity
from inferlab.drill.grading import grade, parse_answer
from inferlab.errors import UnitError


def card(
    unit: str, value: float, *alternates: Alternate, mistakes: tuple[Mistake, ...] = ()
) -> Card:
    return Card("t", Inputs(seed=0), Quantity(value, unit), ("floor",), alternates, mistakes)


# Q1: 16 GB / 3.35 TB/s = 4.78 ms, 209 tok/s
CEILING = card(
    "ms",
    4.776,
    Alternate(Quantity(209.4, "tok/s"), inverse=True),
    mistakes=(Mistake("one-gpu-bandwidth", 9.55),),
)
MBU = card("%", 74.6, Alternate(Quantity(2.5, "TB/s"), inverse=False))


@pytest.mark.parametrize(
    ("c", "text", "value", "unit"),
    [
        (CEILING, "5 ms", 5.0, "ms"),
        (CEILING, "4,8 ms", 4.8, "ms"),
        (CEILING, "4800us", 4.8, "ms"),
        (CEILING, "0.0048 s", 4.8, "ms"),
        (CEILING, "~4.8", 4.8, "ms"),
        (CEILING, "200 tok/s", 200.0, "tok/s"),
        (card("tok/s", 5300), "5,300", 5300.0, "tok/s"),
        (card("tok/s", 5300), "5.3k tok/s", 5300.0, "tok/s"),
        (MBU, "1.4 TB/s", 1.4, "TB/s"),
        (MBU, "1400 GB/s", 1.4, "TB/s"),
        (MBU, "74%", 74.0, "%"),
        (MBU, "0.74", 74.0, "%"),
        (card("$", 0.19), "$0.19", 0.19, "$"),
        (card("$", 0.19), "0.19 USD", 0.19, "$"),
        (card("x", 1.82), "1.8x", 1.8, "x"),
        (card("sequences", 119), "119 sequences", 119.0, "sequences"),
    ],
)
def test_forms(c: Card, text: str, value: float, unit: str) -> None:
    q = parse_answer(text, c)
    assert q.unit == unit
    assert q.value == pytest.approx(value)


@pytest.mark.parametrize("text", ["fast", "", "5 ms", "$5", "abc 5"])
def test_not_an_answer_says_the_forms(text: str) -> None:
    with pytest.raises(UnitError, match="74%"):
        parse_answer(text, MBU)


def test_grades_and_mistake() -> None:
    assert grade(CEILING, "4.8 ms").grade == "right"
    assert grade(CEILING, "200 tok/s").grade == "right"  # 1/200 = 5.0 ms, 4.7 % off
    assert grade(CEILING, "5.5 ms").grade == "close"
    g = grade(CEILING, "9.6 ms")
    assert (g.grade, g.mistake) == ("wrong", "one-gpu-bandwidth")
    g = grade(CEILING, "105 tok/s")  # the same mistake as a rate
    assert (g.grade, g.mistake) == ("wrong", "one-gpu-bandwidth")
    assert g.expected == Quantity(209.4, "tok/s")
    assert grade(CEILING, "0 ms").grade == "wrong"
