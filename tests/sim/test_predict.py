"""Predicting a level from the engine alone: closed loop, Poisson, trace; and the overhead."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from inferlab.jsonio import dumps, loads_strict
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.sim.predict import (
    ClosedLevel,
    PoissonLevel,
    TraceLevel,
    closed_levels,
    measure_overhead,
    predict,
    run_levels,
)
from inferlab.sim.steptime_engine import EngineStepTime, fit_engine
from inferlab.summary import RunSummary
from tests.engines.baseline import engine

ENGINE = {1: 0.0133, 2: 0.0245, 4: 0.0389, 8: 0.0635, 16: 0.1221}
SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"


def model(overhead_s: float = 0.0) -> EngineStepTime:
    return EngineStepTime(fit_engine(engine(ENGINE, 0.0133)), overhead_s)


def test_a_lone_user_is_one_prefill_then_the_batch_1_step() -> None:
    p = predict(model(), LlamaCppKnobs(parallel=4), ClosedLevel(1, 32, 64, 4))
    assert p.ttft_s.p50 == pytest.approx(0.17)  # 32 tokens at the helper's 0.17 s
    assert p.tpot_s.p50 == pytest.approx(0.0133)
    assert p.tokens_per_s == pytest.approx(4 * 64 / (4 * (0.17 + 63 * 0.0133)))
    d = loads_strict(dumps(p))
    assert set(d) == {"ttft_s", "tpot_s", "tokens_per_s", "source"}
    assert "llama.cpp policy, --parallel 4" in d["source"]


def test_more_users_than_slots_wait_in_the_queue() -> None:
    two = predict(model(), LlamaCppKnobs(parallel=2), ClosedLevel(4, 32, 16, 8))
    four = predict(model(), LlamaCppKnobs(parallel=4), ClosedLevel(4, 32, 16, 8))
    assert (two.ttft_s.p50 or 0) > (four.ttft_s.p50 or 0)  # half of them wait for a slot
    assert (two.tpot_s.p50 or 0) < (four.tpot_s.p50 or 0)  # a smaller batch per step


def test_poisson_and_trace_levels() -> None:
    knobs = LlamaCppKnobs(parallel=4)
    p = predict(model(), knobs, PoissonLevel(0.5, 32, 16, 60.0, seed=1))
    assert p.ttft_s.p50 is not None and p.ttft_s.p99 is not None
    assert p.ttft_s.p50 >= 0.17  # never faster than a lone prefill
    t = predict(model(), knobs, TraceLevel(((0.0, 32, 8), (10.0, 64, 8))))
    assert t.ttft_s.p50 == pytest.approx((0.17 + 0.34) / 2)
    assert t.tpot_s.p50 == pytest.approx(0.0133)


def test_the_overhead_measured_from_a_served_run_is_the_median_gap() -> None:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    knobs = LlamaCppKnobs(parallel=16, ctx_size=2560)
    levels = closed_levels(run, ["c=4", "c=8"])
    assert [lv.label for lv, _ in levels] == ["c=4", "c=8"]
    bare = [predict(model(), knobs, level).tpot_s.p50 or 0.0 for _, level in levels]
    gaps = [(lv.tpot_s.p50 or 0.0) - b for (lv, _), b in zip(levels, bare, strict=True)]
    over, how = measure_overhead(model(), knobs, run, ["c=4", "c=8"])
    assert over == pytest.approx(max(sum(gaps) / 2, 0.0))  # the median of two
    assert how.startswith("measured from the served run at c=4, c=8")


def test_every_level_of_a_run_is_described_for_the_prediction() -> None:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    levels = run_levels(run)
    assert [lv.label for lv, _ in levels] == ["c=1", "c=2", "c=4", "c=8", "c=16"]
    assert levels[2][1] == ClosedLevel(4, 32, 64, 16)
    rated = dataclasses.replace(run.levels[0], label="rate=2/s", concurrency=None, rate_per_s=2.0)
    (lv, level), *_ = run_levels(dataclasses.replace(run, levels=(rated,)))
    assert level == PoissonLevel(2.0, 32, 64, rated.requests_measured / 2.0)


def test_errors_against_the_level_measured() -> None:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    lv, level = closed_levels(run)[0]
    p = predict(model(), LlamaCppKnobs(parallel=16, ctx_size=2560), level)
    e = p.errors(lv)
    assert e.tpot_p50_rel == pytest.approx(
        ((p.tpot_s.p50 or 0) - (lv.tpot_s.p50 or 0)) / 0.012036652325396826
    )
    assert e.ttft_p50_rel is not None and e.tokens_per_s_rel is not None
