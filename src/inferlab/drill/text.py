"""What `inferlab drill` prints for one graded answer and for the history's stats."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.drill import strings
from inferlab.drill.numbers import quantity

if TYPE_CHECKING:
    from inferlab.drill.cards import Card
    from inferlab.drill.grading import Graded
    from inferlab.drill.history import KindStats


def grade_lines(card: Card, g: Graded, lang: str) -> list[str]:
    """The grade beside the answer given and the one expected, the mistake, the derivation."""
    given, expected = (quantity(q.value, q.unit) for q in (g.given, g.expected))
    grade_word = strings.say(lang, f"ui.{g.grade}")
    lines = [strings.say(lang, "ui.one", grade=grade_word, given=given, expected=expected)]
    if g.mistake:
        lines.append(strings.mistake(card, g.mistake, lang))
    return [*lines, strings.derivation(card, lang)]


def stats_lines(rows: list[KindStats]) -> list[str]:
    """One row a kind: asked, right, close, wrong, its box and its most frequent mistake."""
    head = (
        f"{'kind':<10} {'asked':>5} {'right':>5} {'close':>5} {'wrong':>5} {'box':>3}  top mistake"
    )
    return [
        head + "  top mistake",
        *(
            f"{r.kind:<10} {r.asked:>5} {r.right:>5} {r.close:>5} {r.wrong:>5} {r.box:>3}  "
            f"{r.top_mistake or '-'}"
            for r in rows
        ),
        "box: 0 = wrong last time ... 4 = mastered; low boxes come back more often",
    ]
