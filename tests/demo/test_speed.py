"""The demo's drift canary across its steps (demo/speed.py): the machine's speed since the
profile beside the predictions (and each level re-simulated at the measured speed where it
moved beyond noise, never graded), and since the engine alone beside the time split.

Readings are recorded numbers put in the summaries; the one test that takes them from a
server uses the scripted fake (testing/fake_steps.py), whose steps slow by 30 % from a
request count the test sets, so which readings are slow is fixed by the order of requests."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, event_loop_runner, run_benchmark
from inferlab.demo.profiled import ProfiledPlan, compared, profiled_predictor
from inferlab.demo.speed import (
    EngineAlone,
    canary_readings,
    engine_speed_lines,
    with_engine_shifts,
)
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.metrics.scoring import attach
from inferlab.metrics.speed_shift import readings_ms
from inferlab.profile.run_profile import ProfileConfig, connected, end_canary, start_canary_at_rest
from inferlab.summary import Canary, EngineSplit, RunSummary
from inferlab.testing.fake_steps import running_fake_steps
from tests.bench.test_canary import STEADY as BENCH_STEADY
from tests.commands.test_demo_profile import scripted_profile
from tests.metrics.test_speed_shift import canary, split

SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"
C1 = Level("concurrency", 1)
# the sweep's c=1: 32 -> 64 tokens, 16 requests; measured TPOT p50 12.04 ms
WORKLOAD = Workload.fixed(prompt_tokens=32, output_tokens=64, levels=[C1], requests_per_level=16)


def _plan(profile_canary: Canary | None) -> ProfiledPlan:
    pr = profiled_predictor(scripted_profile(), 4, 4096, None)
    preds = {"c=1": pr.predict(WORKLOAD, C1)}
    return ProfiledPlan(pr, preds, 4.0, "max concurrency: predicted 4.0", profile_canary)


def _c1_run(measured: Canary) -> RunSummary:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    return dataclasses.replace(run, levels=run.levels[:1], canary=measured)


PROFILE_CANARY = canary((14.0, "lone", None), (14.1, "lone", None), (14.3, "context", None))
SLOWER = canary((16.4, "c=1", None), (16.6, "c=1", None), (16.9, None, None), rest=2)


def test_a_slower_machine_is_said_and_the_prediction_restated_at_its_speed() -> None:
    plan = _plan(PROFILE_CANARY)
    kept, lines = compared(_c1_run(SLOWER), {}, plan, None, WORKLOAD)
    assert kept.speed_shifts is not None
    (shift,) = kept.speed_shifts
    assert shift.against == "profile" and shift.level is None and shift.beyond_noise
    ratio = 16.6 / 14.1  # 18 % slower
    assert shift.ratio == pytest.approx(ratio)
    p = kept.levels[0].predicted
    assert p is not None and p.at_measured_speed is not None
    at, base = p.at_measured_speed, plan.preds["c=1"]
    # re-simulated with every profiled cost x the ratio: a closed loop's whole timeline
    # stretches by it, so every latency does
    assert at.speed_ratio == shift.ratio
    assert at.tpot_s.p50 == pytest.approx(ratio * (base.tpot_s.p50 or 0.0), rel=1e-6)
    assert at.ttft_s.p50 == pytest.approx(ratio * (base.ttft_s.p50 or 0.0), rel=1e-6)
    measured = kept.levels[0].tpot_s.p50 or 0.0
    assert at.errors is not None
    assert at.errors.tpot_p50 == pytest.approx((at.tpot_s.p50 or 0.0) / measured - 1)
    # context beside the grade, which stays the prediction's own
    graded_alone = attach(_c1_run(SLOWER), plan.preds).levels[0].predicted
    assert graded_alone is not None and p.graded == graded_alone.graded
    i = next(k for k, x in enumerate(lines) if x.startswith("machine speed: "))
    assert lines[i] == (
        "machine speed: the machine ran 18 % slower during the measurement than during the "
        "profile (canary 14.1 -> 16.6 ms), beyond both runs' own canary spread (profile 2 %, "
        "measurement 3 %; a move over 5 % is beyond them)"
    )
    assert lines[i + 1].startswith("at the measurement's speed (every profiled cost x1.18, ")
    assert lines[i + 2].split()[:4] == ["c=1", "TPOT", "p50", f"{at.tpot_s.p50 * 1e3:.1f}"]
    assert RunSummary.from_json(kept.to_json()) == kept  # summary.json keeps it all


def test_within_noise_the_move_is_said_and_nothing_is_restated() -> None:
    steady = canary((14.2, "c=1", None), (13.9, "c=1", None), (14.4, None, None), rest=2)
    kept, lines = compared(_c1_run(steady), {}, _plan(PROFILE_CANARY), None, WORKLOAD)
    assert kept.speed_shifts is not None and not kept.speed_shifts[0].beyond_noise
    assert kept.levels[0].predicted is not None
    assert kept.levels[0].predicted.at_measured_speed is None
    said = [x for x in lines if x.startswith("machine speed: ")]
    assert len(said) == 1 and said[0].endswith("the canary cannot tell the two speeds apart")
    assert not any(x.startswith("at the measurement's speed") for x in lines)


def test_a_profile_without_a_canary_compares_nothing() -> None:
    kept, lines = compared(_c1_run(SLOWER), {}, _plan(None), None, WORKLOAD)
    assert kept.speed_shifts is None
    assert not any("machine speed" in x for x in lines)


def _with_splits(run: RunSummary, splits: dict[str, EngineSplit]) -> RunSummary:
    levels = tuple(dataclasses.replace(lv, engine=splits.get(lv.label)) for lv in run.levels)
    return dataclasses.replace(run, levels=levels)


def test_the_split_says_when_the_engine_alone_ran_at_another_speed() -> None:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    run = dataclasses.replace(
        run,
        levels=run.levels[:2],
        canary=canary(
            (9.5, "c=1", None),
            (9.4, "c=1", None),
            (9.6, "c=1", None),  # just before c=1
            (9.4, "c=2", None),  # after c=1, before c=2
            (13.0, None, None),  # after c=2: slow again
            rest=3,
        ),
    )
    run = _with_splits(run, {"c=1": split(15.2, 20.7), "c=2": split(25.0, 22.0)})
    engine = EngineAlone(None, (12.9, 13.0, 13.0, 13.1))
    s = with_engine_shifts(run, engine)
    assert s.speed_shifts is not None
    c1, c2 = s.speed_shifts
    assert (c1.against, c1.level, c2.level) == ("engine_alone", "c=1", "c=2")
    assert c1.reference_readings_ms == engine.canary_ms
    assert c1.measured_tpot_ms == 9.5 and c1.beyond_noise  # 9.6 and 9.4 around c=1
    assert c2.measured_tpot_ms == pytest.approx(11.2) and not c2.beyond_noise  # 9.4 -> 13.0
    (line,) = engine_speed_lines(s)  # only the level that moved beyond its noise
    assert line.startswith(
        "Machine speed: the canary ran 37 % slower during the engine-alone measurement than "
        "during the served level c=1 (canary TPOT 13.0 ms against 9.5 ms)"
    )
    assert ": the split is not reliable at that size;" in line and line.endswith(".")
    # none beyond noise: the first level's, saying so
    calm = with_engine_shifts(run, EngineAlone(None, (9.5, 9.6)))
    (line,) = engine_speed_lines(calm)
    assert "served level c=1" in line and line.endswith("the split is read at one machine speed.")
    assert engine_speed_lines(with_engine_shifts(run, EngineAlone(None))) == []


def test_a_server_that_does_not_answer_gives_no_readings_and_says_why() -> None:
    ms, why = canary_readings("http://127.0.0.1:9/v1", 3)
    assert ms == [] and why is not None and "cannot reach" in why


# Every step 100 ms whatever it holds (tests/bench/test_canary.py's): a canary's TPOT is the
# step, 130 ms once slow. The profile's canary sends 7 requests (1 not kept, 3 at rest, 3
# after); from the 8th on (the bench's first) every step is 30 % slower.
STEADY = dataclasses.replace(BENCH_STEADY, slower_after=7, slower_by=0.3)


async def _profile_canary(url: str) -> Canary | None:
    """The profile's canary, taken by its own code, without the probes between."""
    said: list[str] = []
    async with connected(ProfileConfig(url=url, threads=1)) as (c, _):
        log = await start_canary_at_rest(c, said.append)
        return await end_canary(c, log, said.append)


@pytest.mark.slow
def test_a_machine_that_slowed_since_the_profile_is_said_to_have(tmp_path: Path) -> None:
    load = Workload.fixed(
        prompt_tokens=8, output_tokens=4, levels=[C1], requests_per_level=2, warmup=0
    )
    with running_fake_steps(STEADY) as url:
        profiled = asyncio.run(_profile_canary(url))
        cfg = BenchConfig(
            url=url, model=None, load=load, out_dir=tmp_path, scrape=False, settle_slots=False
        )
        measured = event_loop_runner()(run_benchmark(cfg)).summary
    assert profiled is not None and len(readings_ms(profiled)) == 6
    assert len(readings_ms(measured.canary)) == 4  # 3 at rest, 1 after c=1
    plan = dataclasses.replace(_plan(profiled), preds={})
    kept, lines = compared(measured, {}, plan, None, load)
    assert kept.speed_shifts is not None
    (shift,) = kept.speed_shifts
    assert shift.beyond_noise and 1.2 < shift.ratio < 1.4  # the script's 30 %, with margins
    (said,) = [x for x in lines if x.startswith("machine speed: ")]
    assert said.startswith("machine speed: the machine ran ")
    assert "% slower during the measurement than during the profile" in said
