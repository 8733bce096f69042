"""`inferlab drill`: the deck's cards with fresh numbers: ask, time, grade, show the derivation.

The card's derivation is the `--explain` of the verb that computes its answer
(floor, capacity, cost, amdahl), run in-process on the card's own inputs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from typing import TYPE_CHECKING

from inferlab.errors import InferlabError

if TYPE_CHECKING:
    from inferlab.drill.cards import Card

MAX_CARDS = 10_000


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("drill", help="flash cards with fresh numbers, graded, with a history")
    p.add_argument("--cards", type=int, default=5, help="cards in the session (5)")
    p.add_argument("--kind", help="one kind or a comma list, e.g. mbu,batching (all)")
    p.add_argument("--kinds", action="store_true", help="list the kind names, one a line")
    p.add_argument("--seed", type=int, help="the same seed gives the same card(s)")
    p.add_argument("--lang", default="en", help="the cards' language: en or vi (en)")
    p.add_argument("--answer", help="grade this answer to --kind K --seed S and exit")
    p.add_argument("--stats", action="store_true", help="what you get wrong most, per kind")
    p.add_argument(
        "--history",
        help="history file (default: the user data dir; or $INFERLAB_DRILL_HISTORY)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object: the card or the grade")
    p.set_defaults(run=run)


def verb_explain(argv: tuple[str, ...]) -> list[str]:
    """The `--explain` lines the verb prints for these inputs (before its table)."""
    from inferlab.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main([*argv, "--explain"])
    if code != 0:
        raise InferlabError(f"inferlab {' '.join(argv)} failed: a drill card is broken")
    return buf.getvalue().split("\n\n", 1)[0].splitlines()


def _kinds(args: argparse.Namespace) -> list[str]:
    from inferlab.drill.kinds import check_kinds, kind_names

    if not args.kind:
        return kind_names()
    return check_kinds([k.strip() for k in args.kind.split(",") if k.strip()])


def _card_json(card: Card, lang: str) -> dict[str, object]:
    from inferlab.drill import strings

    return {
        "kind": card.kind,
        "question": strings.question(card, lang),
        "inputs": card.inputs.to_json(),
        "answer": card.answer.to_json(),
        "explain": verb_explain(card.verb_argv),
    }


def _one_card(args: argparse.Namespace, kinds: list[str]) -> int:
    """--json / --answer: one card, no prompt."""
    import random

    from inferlab.drill import grading, strings
    from inferlab.drill.kinds import make_card
    from inferlab.drill.numbers import quantity
    from inferlab.drill.text import grade_lines
    from inferlab.jsonio import dumps

    if len(kinds) != 1:
        raise InferlabError("--json and --answer need one --kind, e.g. --kind ceiling")
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    card = make_card(kinds[0], seed)
    if args.answer is None:
        if args.json:
            print(dumps(_card_json(card, args.lang)))
        else:
            print(strings.question(card, args.lang))
            print(quantity(card.answer.value, card.answer.unit))
        return 0
    g = grading.grade(card, args.answer)
    if args.json:
        print(dumps(g))
        return 0
    print("\n".join(grade_lines(card, g, args.lang)))
    return 0


def _stats(args: argparse.Namespace, kinds: list[str]) -> int:
    from inferlab.drill import history
    from inferlab.drill.text import stats_lines
    from inferlab.jsonio import dumps

    path = history.history_path(args.history)
    rows = history.stats(history.load(path), kinds)
    if args.json:
        print(dumps({"history": str(path), "kinds": rows}))
        return 0
    print("\n".join(stats_lines(rows)))
    print(f"history: {path}")
    return 0


class _Console:
    def ask(self, prompt: str) -> str:
        return input(prompt)

    def say(self, text: str) -> None:
        print(text, flush=True)


def run(args: argparse.Namespace) -> int:
    from inferlab.drill import strings

    strings.check_lang(args.lang)
    kinds = _kinds(args)
    if args.kinds:
        from inferlab.jsonio import dumps

        print(dumps({"kinds": kinds}) if args.json else "\n".join(kinds))
        return 0
    if args.stats:
        return _stats(args, kinds)
    if args.json or args.answer is not None:
        return _one_card(args, kinds)
    if not 1 <= args.cards <= MAX_CARDS:  # the deck is drawn up front: bound its size
        raise InferlabError(f"--cards must be 1 to {MAX_CARDS}")
    from inferlab.drill import history
    from inferlab.drill.session import SessionConfig, run_session

    cfg = SessionConfig(
        kinds=tuple(kinds),
        cards=args.cards,
        lang=args.lang,
        history=history.history_path(args.history),
        seed=args.seed,
    )
    score = run_session(cfg, _Console(), lambda card: verb_explain(card.verb_argv))
    sys.stdout.flush()
    if score.interrupted:  # Ctrl-C / SIGTERM / SIGHUP: the CLI's stop line and exit code
        from inferlab import signals

        signals.kept(f"{score.asked} answer(s) kept in {cfg.history}")
        raise KeyboardInterrupt
    return 0
