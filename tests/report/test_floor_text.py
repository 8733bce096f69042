"""floor's sections, each alone: fields, rows and explain lines that agree with the physics."""

from __future__ import annotations

import subprocess
import sys

import pytest

from inferlab.jsonio import loads_strict
from inferlab.physics.decode import decode_point
from inferlab.report.floor_text import FloorQuery, floor_sections
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import get_hardware

COST = ModelCost.stated(16e9, 128 * 1024, 8e9)
HW = get_hardware("h100-sxm")


def test_optional_sections_are_empty_unless_asked() -> None:
    decode, *rest = floor_sections(FloorQuery(COST, HW, batch=4))
    assert decode.fields["batch"] == 4 and decode.rows and decode.explain
    assert all(not s.fields and not s.rows and not s.explain for s in rest)


def test_decode_fields_match_decode_point() -> None:
    decode = floor_sections(FloorQuery(COST, HW, batch=8, context=1000))[0]
    p = decode_point(COST, HW, 8, 1000)
    assert decode.fields["decode_step_time_s"] == pytest.approx(p.step_time_s)
    assert decode.fields["tokens_per_s_total"] == pytest.approx(8 / p.step_time_s)


def test_claim_above_ceiling_is_impossible_with_causes() -> None:
    ceiling = decode_point(COST, HW, 1, 0).tokens_per_s_per_user
    q = FloorQuery(COST, HW, target_tokens_per_s=ceiling * 0.5, claimed_tokens_per_s=ceiling * 2)
    claims = floor_sections(q)[5]
    assert claims.fields["target_possible"] is True
    assert claims.fields["claimed_possible"] is False
    assert len(claims.fields["impossible_causes"]) == 3


@pytest.mark.slow
def test_floor_json_is_strict_when_a_rate_is_infinite() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "inferlab.cli",
            "floor",
            "--weight-bytes",
            "16.6GB",
            "--bandwidth",
            "3.35TB/s",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    d = loads_strict(out.stdout)  # no Infinity: peak FLOPS not stated is null
    assert d["peak_flops_per_s"] is None and d["ridge_flops_per_byte"] is None
