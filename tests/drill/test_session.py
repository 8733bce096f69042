"""The interactive drill driven end to end through a pseudo-terminal, as a user runs it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from inferlab.drill.numbers import quantity
from inferlab.drill.session import SessionConfig, plan

pytestmark = pytest.mark.slow  # drill as a real process on a pseudo-terminal


KINDS = ("ridge", "amdahl", "cost", "mbu")


def _spawn(history_file: Path, *argv: str) -> pexpect.spawn:
    env = dict(os.environ, INFERLAB_DRILL_HISTORY=str(history_file), COLUMNS="80", LINES="40")
    return pexpect.spawn(
        sys.executable,
        ["-m", "inferlab.cli", "drill", *argv],
        env=env,
        encoding="utf-8",
        dimensions=(40, 80),
        timeout=60,
    )


@pytest.mark.parametrize("quit_with", ["eof", "ctrl-c"])
def test_two_cards_then_quit_keeps_history(history_file: Path, quit_with: str) -> None:
    argv = ("--cards", "4", "--seed", "11", "--kind", ",".join(KINDS))
    cards = plan(SessionConfig(KINDS, 4, "en", history_file, seed=11))
    child = _spawn(history_file, *argv)
    screen: list[str] = []
    child.logfile_read = _Collect(screen)

    child.expect_exact("answer> ")
    child.sendline("fast")  # not a number: asked once more, with the accepted forms
    child.expect_exact("write it like")
    child.expect_exact("answer> ")
    first = cards[0].answer
    child.sendline(quantity(first.value, first.unit))
    child.expect_exact("RIGHT: you said")
    child.expect_exact("Derivation (inferlab")
    child.expect_exact("q to stop> ")
    child.sendline("")
    child.expect_exact("Card 2/4")
    child.expect_exact("answer> ")
    second = cards[1].answer
    child.sendline(quantity(second.value * 1.3, second.unit))
    child.expect_exact("WRONG: you said")
    child.expect_exact("q to stop> ")
    if quit_with == "eof":
        child.sendeof()
    else:
        child.sendintr()
    child.expect_exact("Score: 1 right, 0 close, 1 wrong of 2.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == (0 if quit_with == "eof" else 130)

    kept = [json.loads(line) for line in history_file.read_text().splitlines()]
    assert [(e["kind"], e["seed"], e["grade"]) for e in kept] == [
        (cards[0].kind, cards[0].seed, "right"),
        (cards[1].kind, cards[1].seed, "wrong"),
    ]
    text = "".join(screen).replace("\r\n", "\n")
    # every line fits 80 columns, but for the history file's path, which is not ours to cut
    too_wide = [x for x in text.split("\n") if len(x) > 80 and str(history_file) not in x]
    assert not too_wide
    if quit_with == "ctrl-c":
        assert f"inferlab drill: stopped by SIGINT; 2 answer(s) kept in {history_file}" in text


def test_vietnamese_same_numbers(history_file: Path) -> None:
    child = _spawn(
        history_file, "--cards", "1", "--seed", "3", "--kind", "batching", "--lang", "vi"
    )
    card = plan(SessionConfig(("batching",), 1, "vi", history_file, seed=3))[0]
    child.expect_exact("Thẻ 1/1 · batching")
    child.expect_exact("trả lời> ")
    child.sendline(quantity(card.answer.value, card.answer.unit))
    child.expect_exact("ĐÚNG: bạn nói")
    child.expect_exact(card.numbers["step"])  # the same figures as in English
    child.expect_exact("Điểm: 1 đúng, 0 gần đúng, 0 sai trên 1.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


class _Collect:
    def __init__(self, into: list[str]) -> None:
        self.into = into

    def write(self, s: str) -> None:
        self.into.append(s)

    def flush(self) -> None:
        pass


def test_next_session_favours_the_kind_answered_wrong(history_file: Path) -> None:
    from inferlab.drill import history

    kinds = ("ridge", "cost", "amdahl")
    for k in kinds:  # all mastered ...
        for _ in range(4):
            history.append(history_file, history.Entry(k, 1, "right", None, 9.0, "t"))
    history.append(history_file, history.Entry("cost", 2, "wrong", "power-of-ten", 9.0, "t"))
    firsts = [plan(SessionConfig(kinds, 1, "en", history_file, seed=s))[0].kind for s in range(300)]
    assert firsts.count("cost") > 0.8 * len(firsts)  # weight 16 against 1 and 1
