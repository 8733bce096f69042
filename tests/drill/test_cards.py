"""Every kind, over seeds drawn by hypothesis: the card's answer is what the verb prints
for the same inputs, a right answer grades right, 30 % off grades wrong, each usual
mistake is named. Examples per kind: VERB_EXAMPLES for the verb, GRADE_EXAMPLES for
grading (a session draws its seeds from 0..999,999, as here)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferlab.cli import main
from inferlab.drill.cards import Card
from inferlab.drill.grading import grade
from inferlab.drill.kinds import kind_names, make_card

SEEDS = range(50)  # the fixed sample the "almost always" and "varies" claims are made on
CARD_SEEDS = st.integers(0, 999_999)
VERB_EXAMPLES = 12  # each runs the verb in-process
GRADE_EXAMPLES = 40

# (kind, target) -> the verb's JSON key and the factor from its SI unit to the card's unit
KEYS = {
    ("ceiling", None): ("decode_step_time_s", 1e3),
    ("claim", None): ("tokens_per_s_per_user", 1.0),
    ("mbu", None): ("mbu", 100.0),
    ("gpu-util", None): ("mbu", 100.0),
    ("batching", "per_user"): ("tokens_per_s_per_user", 1.0),
    ("batching", "total"): ("tokens_per_s_total", 1.0),
    ("max-batch", None): ("max_batch", 1.0),
    ("prefill", "time"): ("prefill_time_s", 1e3),
    ("prefill", "stall"): ("stall_steps", 1.0),
    ("ridge", None): ("ridge_flops_per_byte", 1.0),
    ("crossover", "with_kv"): ("compute_bound_batch", 1.0),
    ("crossover", "without_kv"): ("compute_bound_batch_without_kv", 1.0),
    ("cost", None): ("usd_per_million_tokens", 1.0),
    ("amdahl", None): ("speedup", 1.0),
}


def _setup_flags(i: dict[str, Any]) -> list[str]:
    """The card's stated inputs as flags, written from its JSON `inputs`, not from the card."""
    return [
        "--weight-bytes", f"{i['weight_bytes']!r}B",
        "--params", f"{i['params']!r}",
        "--weight-dtype", i["weight_dtype"],
        "--kv-bytes-per-token", f"{i['kv_bytes_per_token']!r}B",
        "--bandwidth", f"{i['bandwidth_bytes_per_s']!r}B/s",
        "--flops", f"{i['peak_flops_per_s']!r}FLOPS",
        "--memory", f"{i['memory_bytes']!r}B",
        "--tp", str(i["tp"]),
    ]  # fmt: skip


def verb_argv(kind: str, i: dict[str, Any]) -> list[str]:
    if kind == "amdahl":
        return ["amdahl", *(f"{f!r}:{s!r}" for f, s in i["parts"])]
    if kind == "cost":
        return [
            "cost", "--gpu-hour", f"{i['usd_per_gpu_hour']!r}",
            "--tokens-per-s", f"{i['tokens_per_s']!r}", "--gpus", str(i["gpus"]),
        ]  # fmt: skip
    extra = {
        "ceiling": ["--context", str(i.get("context_tokens"))],
        "claim": ["--claimed-tokens-per-s", f"{i.get('claimed_tokens_per_s')!r}"],
        "mbu": ["--measured-step", f"{i.get('measured_step_time_s')!r}s"],
        "gpu-util": ["--measured-step", f"{i.get('measured_step_time_s')!r}s"],
        "batching": ["--batch", str(i.get("batch")), "--context", str(i.get("context_tokens"))],
        "max-batch": ["--context", str(i.get("context_tokens"))],
        "prefill": ["--prompt", str(i.get("prompt_tokens")), "--streams", str(i.get("streams"))],
        "ridge": [],
        "crossover": ["--context", str(i.get("context_tokens"))],
    }[kind]
    verb = "capacity" if kind == "max-batch" else "floor"
    return [verb, *_setup_flags(i), *extra]


def _text(card: Card, value: float) -> str:
    unit = card.answer.unit
    if unit == "$":
        return f"${value!r}"
    if unit in ("sequences", "steps"):
        return f"{value!r}"
    return f"{value!r} {unit}"


def _verb_json(argv: list[str]) -> dict[str, Any]:
    """The verb's --json output, run in-process (no capsys: hypothesis runs many examples)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*argv, "--json"])
    assert code == 0, out.getvalue()
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


@pytest.mark.parametrize("kind", kind_names())
@settings(max_examples=VERB_EXAMPLES, deadline=None)
@given(seed=CARD_SEEDS)
def test_answer_is_the_verbs_json(kind: str, seed: int) -> None:
    card = make_card(kind, seed)
    inputs = json.loads(json.dumps(card.inputs.to_json()))
    key, scale = KEYS[(kind, inputs.get("target"))]
    out = _verb_json(verb_argv(kind, inputs))
    assert out[key] is not None
    assert card.answer.value == pytest.approx(out[key] * scale, rel=1e-9)
    if kind == "claim":
        assert (card.verdict == "claim-possible") == out["claimed_possible"]


@pytest.mark.parametrize("kind", kind_names())
@settings(max_examples=GRADE_EXAMPLES, deadline=None)
@given(seed=CARD_SEEDS)
def test_grading(kind: str, seed: int) -> None:
    card = make_card(kind, seed)
    v = card.answer.value
    assert grade(card, _text(card, v)).grade == "right"
    assert grade(card, _text(card, v * 1.04)).grade == "right"
    assert grade(card, _text(card, v * 1.15)).grade == "close"
    assert grade(card, _text(card, v * 1.3)).grade == "wrong"
    assert grade(card, _text(card, v * 0.7)).grade == "wrong"
    for m in card.mistakes:
        g = grade(card, _text(card, m.value))
        assert g.grade != "right"
        assert g.mistake == m.name, (m, card.mistakes)


@pytest.mark.parametrize("kind", kind_names())
def test_every_kind_names_a_mistake_and_varies(kind: str) -> None:
    cards = [make_card(kind, s) for s in SEEDS]
    assert sum(1 for c in cards if c.mistakes) >= 40  # the usual mistake is almost always there
    # fresh numbers (a ridge point has only as many values as GPU x dtype pairs)
    assert len({round(c.answer.value, 9) for c in cards}) >= 12


@pytest.mark.parametrize("kind", kind_names())
def test_same_seed_same_card(kind: str) -> None:
    assert make_card(kind, 123) == make_card(kind, 123)
    assert make_card(kind, 123) != make_card(kind, 124)


@pytest.mark.parametrize("lang", ["en", "vi"])
@pytest.mark.parametrize("kind", kind_names())
def test_every_text_renders_with_the_same_numbers(kind: str, lang: str) -> None:
    from inferlab.drill import strings

    for seed in range(20):
        card = make_card(kind, seed)
        q = strings.question(card, lang)
        d = strings.derivation(card, lang)
        for m in card.mistakes:
            assert strings.mistake(card, m.name, lang)
        strings.verdict(card, lang)
        # the figures a question states are the ones its English twin states
        en = strings.question(card, "en")
        assert re.findall(r"\d[\d,.]*\d|\d", q) == re.findall(r"\d[\d,.]*\d|\d", en)
        assert "{" not in q + d
