"""Predicting a level from the engine alone on the request specs bench sends: closed loop,
Poisson, trace; the overhead measured from a served run (the errors against a measured level:
tests/metrics/test_scoring.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from inferlab.jsonio import dumps, loads_strict
from inferlab.load.lengths import LengthDist
from inferlab.load.spec import Level, columns
from inferlab.load.workload import Workload
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.sim.predict import closed_levels, measure_overhead, predict, predict_config
from inferlab.sim.simulate_level import simulate_level
from inferlab.sim.steptime.engine import EngineStepTime, fit_engine
from inferlab.slo.grammar import parse_slo
from inferlab.summary import Predicted, RunSummary
from tests.engines.baseline import engine

ENGINE = {1: 0.0133, 2: 0.0245, 4: 0.0389, 8: 0.0635, 16: 0.1221}
SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"


def model(overhead_s: float = 0.0) -> EngineStepTime:
    return EngineStepTime(fit_engine(engine(ENGINE, 0.0133)), overhead_s)


def fixed(prompt: int, output: int, n: int, *levels: Level, seed: int = 0) -> Workload:
    return Workload(
        LengthDist.parse(str(prompt), "--prompt-tokens"),
        LengthDist.parse(str(output), "--output-tokens"),
        levels,
        requests_per_level=n,
        seed=seed,
    )


def closed(c: int, prompt: int, output: int, n: int, knobs: LlamaCppKnobs) -> Predicted:
    level = Level("concurrency", c)
    return predict(model(), knobs, level, fixed(prompt, output, n, level).requests(level))


def test_a_lone_user_is_one_prefill_then_the_batch_1_step() -> None:
    level = Level("concurrency", 1)
    reqs = fixed(32, 64, 4, level).requests(level)
    p = predict(model(), LlamaCppKnobs(parallel=4), level, reqs)
    assert p.ttft_s.p50 == pytest.approx(0.17)  # 32 tokens at the helper's 0.17 s
    assert p.tpot_s.p50 == pytest.approx(0.0133)
    assert p.tokens_per_s == pytest.approx(4 * 64 / (4 * (0.17 + 63 * 0.0133)))
    assert p.requests == 4 and p.held_out and p.goodput_requests_per_s is None
    d = loads_strict(dumps(p))
    assert set(d) == {"ttft_s", "tpot_s", "tokens_per_s", "source", "held_out", "requests"}
    assert "llama.cpp policy, --parallel 4" in d["source"]
    assert "serving overhead 0.00 ms/step (none given)" in d["source"]


def test_the_simulated_requests_are_the_specs_bench_sends() -> None:
    """A closed level's requests, lengths and order, are Workload.requests(level)'s."""
    level = Level("concurrency", 3)
    w = dataclasses.replace(
        fixed(1, 1, 9, level, seed=7),
        prompt=LengthDist.parse("uniform:8:40", "--prompt-tokens"),
        output=LengthDist.parse("uniform:4:12", "--output-tokens"),
    )
    reqs = w.requests(level)
    res = simulate_level(predict_config(model(), LlamaCppKnobs(parallel=4)), level, reqs).result
    got = sorted((r.spec, r.prompt_tokens, r.output_tokens) for r in res.requests)
    want = list(
        zip(range(9), reqs.prompt_tokens.tolist(), reqs.output_tokens.tolist(), strict=True)
    )
    assert got == want and len(set(reqs.prompt_tokens.tolist())) > 1
    p = predict(model(), LlamaCppKnobs(parallel=4), level, reqs)
    assert p.requests == len(reqs) == 9


def test_an_open_level_arrives_at_the_specs_instants() -> None:
    level = Level("rate", 2.0)
    reqs = fixed(32, 16, 20, level, seed=3).requests(level)
    res = simulate_level(predict_config(model(), LlamaCppKnobs(parallel=4)), level, reqs).result
    arrivals = sorted((r.spec, r.arrival_s) for r in res.requests)
    assert [t for _, t in arrivals] == pytest.approx(reqs.arrival_s.tolist())


def test_more_users_than_slots_wait_in_the_queue() -> None:
    two = closed(4, 32, 16, 8, LlamaCppKnobs(parallel=2))
    four = closed(4, 32, 16, 8, LlamaCppKnobs(parallel=4))
    assert (two.ttft_s.p50 or 0) > (four.ttft_s.p50 or 0)
    assert (two.tpot_s.p50 or 0) < (four.tpot_s.p50 or 0)


def test_poisson_and_trace_levels() -> None:
    knobs = LlamaCppKnobs(parallel=4)
    level = Level("rate", 0.5)
    p = predict(model(), knobs, level, fixed(32, 16, 30, level, seed=1).requests(level))
    assert p.ttft_s.p50 is not None and p.ttft_s.p99 is not None
    assert p.ttft_s.p50 >= 0.17  # never faster than a lone prefill
    trace = columns(np.array([0.0, 10.0]), np.array([32, 64]), np.array([8, 8]))
    t = predict(model(), knobs, Level("trace", 0.0, "trace"), trace)
    assert t.ttft_s.p50 == pytest.approx((0.17 + 0.34) / 2)
    assert t.tpot_s.p50 == pytest.approx(0.0133)


def test_goodput_under_an_slo_is_judged_as_bench_judges_a_level() -> None:
    level = Level("concurrency", 1)
    reqs = fixed(32, 64, 4, level).requests(level)
    knobs = LlamaCppKnobs(parallel=4)
    ok = predict(model(), knobs, level, reqs, parse_slo("ttft=1s,tpot=50ms"))
    assert ok.goodput_requests_per_s == pytest.approx(ok.tokens_per_s / 64)  # all good
    bad = predict(model(), knobs, level, reqs, parse_slo("tpot=10ms"))
    assert bad.goodput_requests_per_s == 0.0


def test_the_overhead_measured_from_a_served_run_is_the_median_gap() -> None:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    knobs = LlamaCppKnobs(parallel=16, ctx_size=2560)
    levels = closed_levels(run, ["c=4", "c=8"])
    assert [lv.label for lv, _, _ in levels] == ["c=4", "c=8"]
    bare = [predict(model(), knobs, lvl, r).tpot_s.p50 or 0.0 for _, lvl, r in levels]
    gaps = [(lv.tpot_s.p50 or 0.0) - b for (lv, _, _), b in zip(levels, bare, strict=True)]
    over, how = measure_overhead(model(), knobs, run, ["c=4", "c=8"])
    assert over == pytest.approx(max(sum(gaps) / 2, 0.0))  # the median of two
    assert how.startswith("measured from the served run at c=4, c=8")
