"""`inferlab drill` as scripts use it: --kinds, --json, --answer, --stats, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferlab.drill.kinds import kind_names, make_card
from inferlab.jsonio import loads_strict


def test_kinds_one_a_line(run_cli: Any) -> None:
    code, out, _ = run_cli("drill", "--kinds")
    assert code == 0
    assert out.splitlines() == kind_names()
    assert len(set(kind_names())) == len(kind_names())  # no kind listed twice


@pytest.mark.parametrize("kind", kind_names())
def test_json_card_and_explain(kind: str, run_cli: Any) -> None:
    code, out, err = run_cli("drill", "--kind", kind, "--seed", "7", "--json")
    assert code == 0, err
    d = loads_strict(out)
    assert list(d) == ["kind", "question", "inputs", "answer", "explain"]
    card = make_card(kind, 7)
    assert d["answer"] == {"value": card.answer.value, "unit": card.answer.unit}
    assert d["inputs"]["seed"] == 7
    # the explain lines are the verb's own --explain for the card's inputs
    code, verb_out, _ = run_cli(*card.verb_argv, "--explain")
    assert d["explain"] == verb_out.split("\n\n")[0].splitlines()
    assert len(d["explain"]) >= 2
    _, again, _ = run_cli("drill", "--kind", kind, "--seed", "7", "--json")
    assert again == out  # the same seed, the same card


def test_answer_grading_json(run_cli: Any) -> None:
    card = make_card("ceiling", 7)
    v = card.answer.value
    code, out, _ = run_cli(
        "drill", "--kind", "ceiling", "--seed", "7", "--json", "--answer", f"{v:.3g} ms"
    )
    assert code == 0
    d = loads_strict(out)
    assert list(d) == ["grade", "expected", "given", "mistake"]
    assert d["grade"] == "right" and d["mistake"] is None
    assert d["expected"] == {"value": v, "unit": "ms"}
    m = card.mistakes[0]
    _, out, _ = run_cli(
        "drill", "--kind", "ceiling", "--seed", "7", "--json", "--answer", f"{m.value:.4g}ms"
    )
    assert loads_strict(out)["mistake"] == m.name


def test_amdahl_deck_mistake(run_cli: Any) -> None:
    """Q7: speedups multiplied instead of new times added is named."""
    seed = next(s for s in range(200) if len(make_card("amdahl", s).inputs.parts or ()) == 2)
    card = make_card("amdahl", seed)
    (f1, s1), (f2, s2) = card.inputs.parts or ()
    _, out, _ = run_cli(
        "drill", "--kind", "amdahl", "--seed", str(seed), "--json", "--answer", f"{s1 * s2}x"
    )
    assert loads_strict(out)["mistake"] == "speedups-multiplied"
    right = 1 / (1 - f1 - f2 + f1 / s1 + f2 / s2)
    _, out, _ = run_cli(
        "drill", "--kind", "amdahl", "--seed", str(seed), "--json", "--answer", f"{right:.3f}"
    )
    assert loads_strict(out)["grade"] == "right"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--kind", "nope"], "kinds: ceiling, claim"),
        (["--kind", "ceiling,nope", "--kinds"], "unknown kind nope"),
        (["--kind", "ceiling", "--seed", "1", "--answer", "fast"], "write it like"),
        (["--kind", "mbu", "--seed", "1", "--answer", "5 ms", "--json"], "74%"),
        (["--lang", "fr"], "en, vi"),
        (["--json"], "one --kind"),
        (["--cards", "0"], "--cards"),
    ],
)
def test_bad_input_exit_2(argv: list[str], says: str, run_cli: Any) -> None:
    code, out, err = run_cli("drill", *argv)
    assert code == 2
    assert says in err and len(err.strip().splitlines()) == 1
    assert out == ""


def test_stats(run_cli: Any, history_file: Path) -> None:
    lines = [
        {
            "kind": "cost",
            "seed": 1,
            "grade": "wrong",
            "mistake": "power-of-ten",
            "seconds": 30,
            "at": "x",
        },
        {"kind": "ridge", "seed": 2, "grade": "right", "mistake": None, "seconds": 20, "at": "x"},
    ]
    history_file.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, out, _ = run_cli("drill", "--stats", "--json")
    assert code == 0
    d = loads_strict(out)
    assert d["history"] == str(history_file)
    assert d["kinds"][0]["kind"] == "cost" and d["kinds"][0]["top_mistake"] == "power-of-ten"
    code, out, _ = run_cli("drill", "--stats")
    assert out.splitlines()[1].split()[:5] == ["cost", "1", "0", "0", "1"]
