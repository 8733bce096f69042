"""Levers: speculative decoding's expected tokens and its knobs."""

from __future__ import annotations

import pytest

from inferlab.physics.levers import Speculation, expected_tokens_per_verify, levers
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import get_hardware


def test_expected_tokens_per_verify() -> None:
    assert expected_tokens_per_verify(4, 0.0) == pytest.approx(1.0)  # only the target's token
    assert expected_tokens_per_verify(4, 1.0) == pytest.approx(5.0)
    assert expected_tokens_per_verify(3, 0.8) == pytest.approx((1 - 0.8**4) / 0.2)


def test_better_acceptance_speeds_speculation_up() -> None:
    cost, hw = ModelCost.stated(16e9, 128 * 1024, 8e9), get_hardware("h100-sxm")

    def spec(acceptance: float) -> float:
        _, eff = levers(cost, hw, 1, 1000, spec=Speculation(draft_tokens=4, acceptance=acceptance))
        return next(e.per_user_speedup for e in eff if e.lever.startswith("speculative"))

    assert spec(0.9) > spec(0.6) > spec(0.2)
    assert spec(0.0) < 1.0  # nothing accepted: the draft steps are pure cost
