"""Reading an answer with its unit and grading it: right within 5 %, close within 20 %.

`5 ms`, `200 tok/s`, `1.4 TB/s`, `74%`, `0.74`, `$0.19`, `1.8x`, `119`; a bare
number is read in the card's unit; `4,8` (decimal comma) and `5,300` both read
as a person means them. Times and bandwidths go through units.py's parsers.
An answer that matches a usual mistake (within 5 %) names it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from inferlab.drill.cards import Card, Quantity
from inferlab.errors import UnitError
from inferlab.units import parse_bandwidth, parse_time

RIGHT = 0.05
CLOSE = 0.20

_NUMBER = re.compile(
    r"(?P<num>[0-9]+(?:[.,][0-9]+)*(?:[eE][-+]?[0-9]+)?)\s*(?P<k>[kK](?![a-zA-Z]))?"
)
_HEDGES = re.compile(r"^(?:~|≈|about|around|roughly|khoảng|chừng|tầm)\s*", re.IGNORECASE)

# unit words -> the card unit they mean
_WORDS = {
    "tok/s": ("tok/s", "token/s", "tokens/s", "t/s", "tps", "tokens/sec", "tok/sec"),
    "%": ("%", "percent", "pct"),
    "FLOP/B": ("flop/b", "flop/byte", "flops/byte", "flop/bytes", "flops/b"),
    "x": ("x", "×", "times", "lần", "fold"),
    "sequences": ("sequences", "seqs", "seq", "users", "requests", "chuỗi", "người"),
    "steps": ("steps", "step", "decode steps", "bước", "bước decode"),
    "$": ("$", "usd", "dollars", "/m", "/mtok", "/1m", "usd/m", "per million", "/million"),
}
FORMS = {
    "ms": "4.8 ms, 4800 us, 0.0048 s (or a rate: 209 tok/s)",
    "tok/s": "200 tok/s, 5.3k tok/s, 5,300",
    "%": "74%, 74 %, 0.74",
    "TB/s": "1.4 TB/s, 1400 GB/s",
    "FLOP/B": "295, 295 FLOP/B",
    "$": "$0.19, 0.19, 0.19 USD",
    "x": "1.8x, 1.8",
    "sequences": "119, 119 sequences",
    "steps": "27, 27 steps",
}


@dataclass(frozen=True, slots=True)
class Graded:
    grade: str  # "right" | "close" | "wrong"
    expected: Quantity  # in the unit the answer was given in
    given: Quantity
    mistake: str | None
    off: float  # relative error against the expected answer

    def to_json(self) -> dict[str, Any]:
        return {
            "grade": self.grade,
            "expected": self.expected.to_json(),
            "given": self.given.to_json(),
            "mistake": self.mistake,
        }


def accepted_forms(card: Card) -> str:
    units = [card.answer.unit, *(a.quantity.unit for a in card.alternates)]
    return "; ".join(FORMS[u] for u in dict.fromkeys(units) if u in FORMS)


def _number(text: str) -> float:
    """'4,8' -> 4.8, '5,300' -> 5300, '5.300,5' -> 5300.5, '1,234,567' -> 1234567."""
    if "," in text and "." in text:
        text = (
            text.replace(".", "").replace(",", ".")
            if text.rfind(",") > text.rfind(".")
            else text.replace(",", "")
        )
    elif "," in text:
        groups = text.split(",")
        thousands = len(groups) > 2 or (len(groups[-1]) == 3 and groups[0] != "0")
        text = text.replace(",", "") if thousands else text.replace(",", ".")
    return float(text)


def _unit_of(rest: str, primary: str) -> str:
    word = rest.strip().lower().rstrip(".")
    if word in ("", "≈"):
        return primary
    for unit, words in _WORDS.items():
        if word in words:
            return unit
    if re.fullmatch(r"(ns|us|µs|μs|ms|s|sec)(/tok(en)?)?", word):
        return "ms"
    if re.fullmatch(r"[kmgtp]i?b/s", word):
        return "TB/s"
    return ""


def parse_answer(text: str, card: Card) -> Quantity:
    """The answer as a Quantity in one of the card's units; UnitError says what is accepted."""
    raw = _HEDGES.sub("", text.strip())
    dollar = raw.startswith("$") or raw.lower().startswith("us$")
    raw = re.sub(r"^(us)?\$\s*", "", raw, flags=re.IGNORECASE)
    m = _NUMBER.match(raw)
    primary = card.answer.unit
    unit = _unit_of(raw[m.end() :], primary) if m else ""
    if dollar and unit in ("$", primary):
        unit = "$"
    allowed = {primary, *(a.quantity.unit for a in card.alternates)}
    if m is None or unit not in allowed or (dollar and unit != "$"):
        raise UnitError(f"cannot read {text!r} as an answer; write it like {accepted_forms(card)}")
    value = _number(m.group("num")) * (1e3 if m.group("k") else 1.0)
    rest = raw[m.end() :].strip()
    if unit == "ms" and rest:
        value = parse_time(f"{value}{rest.split('/')[0]}") * 1e3
    elif unit == "TB/s":
        prefix = rest[0].upper() + ("i" if rest[1:2].lower() == "i" else "")
        value = parse_bandwidth(f"{value}{prefix}B/s") / 1e12
    elif unit == "%" and not rest and value < 2:
        value *= 100  # 0.74 means 74 %
    return Quantity(value, unit)


def grade(card: Card, text: str) -> Graded:
    given = parse_answer(text, card)
    answer = card.answer
    expected = answer
    value = given.value
    if given.unit != answer.unit:
        alt = next(a for a in card.alternates if a.quantity.unit == given.unit)
        expected = alt.quantity
        if alt.inverse:  # 4.78 ms per token <-> 209 tok/s
            value = answer.value * alt.quantity.value / given.value if given.value else 0.0
        else:
            value = answer.value * given.value / alt.quantity.value
    off = abs(value - answer.value) / abs(answer.value)
    verdict = "right" if off <= RIGHT else "close" if off <= CLOSE else "wrong"
    named = None
    if verdict != "right":
        named = next(
            (m.name for m in card.mistakes if abs(value - m.value) <= RIGHT * abs(m.value)), None
        )
    return Graded(verdict, expected, given, named, off)
