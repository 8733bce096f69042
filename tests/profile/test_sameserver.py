"""One check for "is this measurement of this server?" (engine baseline and profile)."""

from __future__ import annotations

import pytest

from inferlab.errors import InferlabError
from inferlab.profile.sameserver import count_problems, refuse_mismatch, same_model


def test_models_are_compared_by_stem_and_a_blank_one_is_unknown() -> None:
    assert same_model("/models/SmolLM2-135M.gguf", "smollm2-135m-instruct-q8_0.gguf")
    assert same_model("SmolLM2-135M-Q8_0.gguf", "smollm2-135m")  # an id naming the file
    assert same_model("", "qwen-0.5b.gguf")
    assert not same_model("/models/qwen-0.5b.gguf", "SmolLM2-135M.gguf")


def test_threads_and_slots_are_named_with_the_side_that_measured_them() -> None:
    assert count_problems("profile", (4, 2), (4, 2)) == []
    assert count_problems("baseline", (1, None), (4, 8)) == [
        "the server uses 1 thread(s), the baseline 4"
    ]
    assert count_problems("profile", (4, 1), (4, 2)) == ["the server has 1 slot(s), the profile 2"]


def test_a_mismatch_is_one_line_unless_forced() -> None:
    refuse_mismatch("baseline x", ["a differs"], "measure again", force=True)
    refuse_mismatch("baseline x", [], "measure again", force=False)
    with pytest.raises(InferlabError, match=r"^baseline x: a; b; measure again, or add --force$"):
        refuse_mismatch("baseline x", ["a", "b"], "measure again", force=False)
