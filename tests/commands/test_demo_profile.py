"""The demo's comparison after planning with a served profile: the profile's predictions
in the table (fixed numbers in, the printed errors out), the prefix-cache hit ratio beside
the server's, the engine-alone table beside it, and the max-load answer."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from inferlab.console.predict_text import GRADE_RULE
from inferlab.demo.profiled import ProfiledPlan, compared, profiled_predictor
from inferlab.load.workload import Workload
from inferlab.profile.record import SCHEMA_VERSION, ProfileRecord, ServerIdentity
from inferlab.summary import Predicted, PredictedQuantiles, RunSummary
from tests.profile.test_fit import scripted_observations

SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"


def pred(ttft50: float, ttft99: float, tpot: float, tps: float, hit: float | None) -> Predicted:
    return Predicted(
        ttft_s=PredictedQuantiles(p50=ttft50, p99=ttft99),
        tpot_s=PredictedQuantiles(p50=tpot),
        tokens_per_s=tps,
        source="test",
        held_out=True,
        prefix_hit_ratio=hit,
    )


def scripted_profile() -> ProfileRecord:
    """A llama-server profile (4 slots of 1024) whose observations are the fit test's."""
    return ProfileRecord(
        schema_version=SCHEMA_VERSION,
        created_unix_s=0.0,
        url="http://x/v1",
        server=ServerIdentity("m.gguf", "llamacpp", 1, 4, 1024),
        budget=1,
        wall_s=1.0,
        observations=tuple(scripted_observations()),
    )


def plan(preds: dict[str, Predicted]) -> ProfiledPlan:
    pr = profiled_predictor(scripted_profile(), 4, 4096, None)
    return ProfiledPlan(pr, preds, 4.0, "max concurrency within ttft=2s: predicted 4.0")


def test_the_table_shows_the_profiles_prediction_its_errors_and_the_max_load() -> None:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    c1 = run.levels[0]  # measured: TTFT p50 170.3 ms, p99 208.0 ms, TPOT 12.04 ms, 68.27 tok/s
    run = dataclasses.replace(
        run, levels=(dataclasses.replace(c1, prefix_cache_hit_ratio=0.5), *run.levels[1:])
    )
    profiled = {"c=1": pred(0.187, 0.208, 0.0132, 68.27, 0.25)}
    engine = {"c=1": pred(0.085, 0.104, 0.0060, 136.5, None)}
    kept, lines = compared(run, engine, plan(profiled), "searched 4 on the server")
    assert kept.levels[0].predicted is not None
    assert kept.levels[0].predicted.tpot_s.p50 == 0.0132  # the profile's is the one kept
    assert lines[0].startswith("predicted before measuring (the served profile")
    row = lines[3].split()
    # TTFT p50 187 vs 170 (+10 %), p99 208 vs 208 (+0 %), TPOT 13.2 vs 12.0 (+10 %)
    assert row[:5] == ["c=1", "yes", "187", "170", "+10%"]
    assert row[5:11] == ["208", "208", "+0%", "13.2", "12.0", "+10%"]
    # each graded: an old summary has no interval, so by the target alone
    assert lines[4] == GRADE_RULE
    graded = ["c=1", "170", "within_target", "208", "within_target", "12.0", "within_target"]
    assert lines[6].split() == [*graded, "-"]  # no SLO: goodput not judged
    assert lines[7] == "predicted: TTFT p50 1 of 1, TTFT p99 1 of 1, TPOT p50 1 of 1 levels"
    assert lines[8] == "prefix cache hits c=1: predicted 25%, server 50% (a perfect cache: -)"
    assert lines[9].startswith("predicted before measuring (engine alone")
    assert lines[12].split()[2:5] == ["85", "170", "-50%"]
    assert lines[-1] == "max concurrency within ttft=2s: predicted 4.0; searched 4 on the server"


def test_without_a_profile_the_engine_alone_prediction_is_kept() -> None:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    engine = {"c=1": pred(0.085, 0.104, 0.0060, 136.5, None)}
    kept, lines = compared(run, engine, None, None)
    assert kept.levels[0].predicted is not None and kept.levels[0].predicted.tpot_s.p50 == 0.006
    assert lines[0].startswith("predicted before measuring (engine alone")
    assert not any(x.startswith("max concurrency") for x in lines)


def test_the_max_load_is_predicted_by_the_simulators_search_within_the_sweeps_range() -> None:
    from inferlab.bench.benchmark import BenchConfig
    from inferlab.demo.profiled import predicted_max
    from inferlab.load.spec import Level
    from inferlab.slo.grammar import parse_slo

    # the scripted step: 20 ms + 4 ms a decoder (+ context); 64-token replies at 4 users
    # take ~45 ms a token, at 2 users ~30 ms: a TPOT bound of 35 ms holds 2 users, not 4
    slo = parse_slo("tpot=35ms")
    pr = plan({}).predictor
    pr = dataclasses.replace(pr, slo=slo)
    levels = [Level("concurrency", c) for c in (1, 2, 4)]
    cfg = BenchConfig(
        url="", model=None, load=Workload.fixed(prompt_tokens=32, output_tokens=64, levels=levels)
    )
    cfg.slo = slo
    assert predicted_max(pr, cfg, 4) == 2.0
    assert predicted_max(dataclasses.replace(pr, slo=parse_slo("tpot=1s")), cfg, 4) == 4.0
