"""The interactive drill: ask, time, grade, show the card, keep score and history.

The terminal and the verb `--explain` runner are injected (commands/drill.py
passes input()/print() and the in-process CLI), so the loop stays testable and
drill/ imports no command. Every graded answer is appended to the history at
once; EOF, `q` or Ctrl-C end the session with the score so far.
"""

from __future__ import annotations

import random
import shutil
import textwrap
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from inferlab.drill import history, strings
from inferlab.drill.cards import Card
from inferlab.drill.grading import Graded, accepted_forms, grade
from inferlab.drill.kinds import make_card
from inferlab.drill.numbers import quantity, say
from inferlab.errors import UnitError

QUIT = ("q", "quit", "exit", ":q")
Explain = Callable[[Card], list[str]]


class Terminal(Protocol):
    def ask(self, prompt: str) -> str: ...  # raises EOFError / KeyboardInterrupt

    def say(self, text: str) -> None: ...


@dataclass(frozen=True, slots=True)
class SessionConfig:
    kinds: tuple[str, ...]
    cards: int
    lang: str
    history: Path
    seed: int | None = None
    minute_s: float = 60.0


@dataclass(frozen=True, slots=True)
class Score:
    right: int
    close: int
    wrong: int
    interrupted: bool  # Ctrl-C rather than EOF / q / the last card

    @property
    def asked(self) -> int:
        return self.right + self.close + self.wrong


class _Quit(Exception):
    """The user typed q."""


def _width() -> int:
    return min(shutil.get_terminal_size((80, 24)).columns, 80)


def _wrap(text: str, indent: str = "", hang: str = "") -> str:
    """Fill to the terminal (80 columns at most); `hang` indents continuation lines more."""
    return "\n".join(
        textwrap.fill(
            p,
            _width(),
            initial_indent=indent,
            subsequent_indent=indent + hang,
            break_on_hyphens=False,
        )
        for p in text.split("\n")
    )


def _ask(term: Terminal, prompt: str) -> str:
    text = term.ask(prompt).strip()
    if text.lower() in QUIT:
        raise _Quit
    return text


def _read_answer(card: Card, cfg: SessionConfig, term: Terminal) -> Graded | None:
    """Grade the answer; an unreadable one is asked once more with the accepted forms."""
    text = _ask(term, strings.say(cfg.lang, "ui.prompt"))
    for attempt in (1, 2):
        try:
            return grade(card, text)
        except UnitError:
            if attempt == 2:
                term.say(strings.say(cfg.lang, "ui.unread"))
                return None
            forms = accepted_forms(card)
            term.say(_wrap(strings.say(cfg.lang, "ui.reask", text=text, forms=forms)))
            text = _ask(term, strings.say(cfg.lang, "ui.prompt"))
    return None


def _header(card: Card, i: int, n: int, lang: str) -> str:
    title = f"── {strings.say(lang, 'ui.card', i=i, n=n, kind=card.kind)} "
    return title + "─" * max(_width() - len(title), 3)


def _show_card(
    card: Card, g: Graded | None, secs: float, cfg: SessionConfig, term: Terminal
) -> None:
    lang = cfg.lang
    lines = []
    if g is not None:
        graded = strings.say(
            lang,
            "ui.graded",
            grade=strings.say(lang, f"ui.{g.grade}"),
            given=quantity(g.given.value, g.given.unit),
            expected=quantity(g.expected.value, g.expected.unit),
            off=f"{say(g.off * 100, 2)} %",
            secs=f"{secs:.0f}",
        )
        lines.append(graded + (strings.say(lang, "ui.over") if secs > cfg.minute_s else ""))
    lines.append(strings.say(lang, "ui.key", text=strings.derivation(card, lang)))
    verdict = strings.verdict(card, lang)
    if verdict:
        lines.append(verdict)
    if g is not None and g.mistake:
        lines.append(strings.say(lang, "ui.mistake", text=strings.mistake(card, g.mistake, lang)))
    elif card.mistakes:
        text = strings.mistake(card, card.mistakes[0].name, lang)
        lines.append(strings.say(lang, "ui.usual", text=text))
    term.say("\n".join(_wrap(x) for x in lines))


def _show_explain(card: Card, explain: list[str], lang: str, term: Terminal) -> None:
    out = [strings.say(lang, "ui.explain", verb=card.verb_argv[0])]
    out += [_wrap(x, "  ", "    ") for x in explain]
    out.append(_wrap(strings.say(lang, "ui.check", argv=" ".join(card.verb_argv))))
    term.say("\n".join(out))


def _one_card(
    card: Card, i: int, n: int, cfg: SessionConfig, term: Terminal, explain: Explain
) -> str:
    """Ask one card, record it in the history at once, show it; the grade's name."""
    term.say(_header(card, i, n, cfg.lang))
    term.say(_wrap(strings.question(card, cfg.lang)))
    deadline = time.strftime("%H:%M:%S", time.localtime(time.time() + cfg.minute_s))
    timer = strings.say(cfg.lang, "ui.timer", deadline=deadline, unit=card.answer.unit)
    term.say(_wrap(timer))
    start = time.monotonic()
    g = _read_answer(card, cfg, term)
    secs = time.monotonic() - start
    grade_name = g.grade if g else "wrong"
    entry = history.Entry(
        card.kind,
        card.seed,
        grade_name,
        g.mistake if g else None,
        round(secs, 1),
        datetime.now(UTC).isoformat(timespec="seconds"),
    )
    history.append(cfg.history, entry)
    _show_card(card, g, secs, cfg, term)
    _show_explain(card, explain(card), cfg.lang, term)
    return grade_name


def plan(cfg: SessionConfig) -> list[Card]:
    """The session's cards: kinds drawn by their Leitner boxes, a fresh seed each."""
    rng = random.Random(cfg.seed)
    box = history.boxes(history.load(cfg.history), list(cfg.kinds))
    return [make_card(k, rng.randrange(1_000_000)) for k in history.pick(rng, box, cfg.cards)]


def run_session(cfg: SessionConfig, term: Terminal, explain: Explain) -> Score:
    """Cards of the kinds the Leitner boxes favour; the score, however the session ends."""
    cards = plan(cfg)
    tally: Counter[str] = Counter()
    interrupted = False
    try:
        for i, card in enumerate(cards, 1):
            tally[_one_card(card, i, len(cards), cfg, term, explain)] += 1
            if i < len(cards):
                _ask(term, strings.say(cfg.lang, "ui.next"))
    except (EOFError, _Quit):
        pass
    except KeyboardInterrupt:
        interrupted = True
    score = Score(tally["right"], tally["close"], tally["wrong"], interrupted)
    total = strings.say(
        cfg.lang,
        "ui.score",
        right=score.right,
        close=score.close,
        wrong=score.wrong,
        n=score.asked,
    )
    term.say(f"\n{total}\n" + strings.say(cfg.lang, "ui.saved", path=cfg.history))
    return score
