"""A level's `predicted` block: made from the engine alone, stored with its errors, and read
back by RunSummary.from_json unchanged (old files without it read as None)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from inferlab.jsonio import dumps, loads_strict
from inferlab.metrics.scoring import with_prediction
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.sim.predict import closed_levels, predict
from inferlab.sim.steptime.engine import EngineStepTime, fit_engine
from inferlab.slo.grammar import parse_slo
from inferlab.summary import RunSummary
from tests.engines.baseline import engine

SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"
ENGINE = {1: 0.0133, 2: 0.0245, 4: 0.0389, 8: 0.0635, 16: 0.1221}


def predicted_run() -> RunSummary:
    """The checked-in llama.cpp sweep, each level carrying a prediction (SLO-judged)."""
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    model = EngineStepTime(fit_engine(engine(ENGINE, 0.0133)))
    knobs = LlamaCppKnobs(parallel=16, ctx_size=2560)
    slo = parse_slo("ttft=2s,tpot=150ms")
    levels = [
        with_prediction(lv, predict(model, knobs, level, reqs, slo))
        for lv, level, reqs in closed_levels(run)
    ]
    return dataclasses.replace(run, levels=tuple(levels))


def test_the_predicted_block_round_trips_through_summary_json() -> None:
    run = predicted_run()
    text = dumps(run)
    again = RunSummary.from_json(loads_strict(text))
    assert again == run
    for lv in again.levels:
        p = lv.predicted
        assert p is not None and p.held_out and p.errors is not None
        assert p.requests == lv.requests_measured
        for x in (p.ttft_s.p50, p.ttft_s.p99, p.tpot_s.p50, p.tokens_per_s):
            assert x is not None and math.isfinite(x) and x > 0
        assert p.goodput_requests_per_s is not None
        assert p.errors.tpot_p50 == pytest.approx(
            ((p.tpot_s.p50 or 0) - (lv.tpot_s.p50 or 0)) / (lv.tpot_s.p50 or 1)
        )
        assert p.errors.goodput_requests_per_s is None  # the checked-in run had no --slo
    d = loads_strict(text)["levels"][0]["predicted"]
    assert set(d) >= {"ttft_s", "tpot_s", "tokens_per_s", "source", "held_out", "errors"}
    assert set(d["ttft_s"]) == {"p50", "p99"} and set(d["tpot_s"]) == {"p50"}


def test_a_run_without_predictions_reads_as_none() -> None:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    assert all(lv.predicted is None for lv in run.levels)
    assert all("predicted" not in lv for lv in loads_strict(dumps(run))["levels"])


def test_a_damaged_block_is_named() -> None:
    d = loads_strict(dumps(predicted_run()))
    d["levels"][1]["predicted"]["held_out"] = "yes"
    with pytest.raises(ValueError, match=r"levels\[1\]\.predicted\.held_out"):
        RunSummary.from_json(d)
