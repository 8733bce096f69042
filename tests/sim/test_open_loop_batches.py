"""Issue 46, item 3: an open loop on vLLM needs no flag. Its batch is not known before it runs
(vLLM's max_num_seqs of 128 only bounds it), so the simulator refuses only a batch a step
reaches past the step time's limit (2x the largest batch measured), naming the request
that joined it and when; a closed loop's batch is known, and still refused up front.

Both measured step times are tried: a vLLM profile and an engine baseline, each measured
up to batch 8 (a limit of 16 decoders), on vLLM's scheduler at max_num_seqs 128."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from inferlab.commands.flags.names import FLAG_NAMES
from inferlab.errors import ConfigError
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.profile.fit import fit_profile
from inferlab.sim.policies.vllm_knobs import VllmKnobs
from inferlab.sim.simulate_level import SimConfig
from inferlab.sim.simulated_run import run
from inferlab.sim.steptime.engine import EngineStepTime, fit_engine
from inferlab.sim.steptime.profile import ProfileStepTime
from tests.engines.baseline import engine
from tests.profile.test_vllm_simulate import vllm_observations, vllm_profile

VLLM = VllmKnobs().policy()  # max_num_seqs 128, no KV limit: only the batch limit binds
EIGHT = {1: 0.0133, 2: 0.0245, 4: 0.0389, 8: 0.0635}  # an engine measured up to batch 8
MEASURED = pytest.mark.parametrize("kind", ["profile", "engine"])
# the refusal: when, which request, the batch and the limit (one line)
REFUSED = re.compile(
    r"^at t = (?P<t>[\d.]+) s, request (?P<id>\d+) \(sent at (?P<sent>[\d.]+) s\) joined the "
    r"decoding batch, and batch (?P<batch>\d+) is beyond 2x the largest batch the (profile|engine "
    r"baseline) measured \(8\), a limit of 16 decoders: .* or add --force to extrapolate "
    r"anyway$"
)


def measured(kind: str, force: bool = False) -> ProfileStepTime | EngineStepTime:
    if kind == "profile":
        return ProfileStepTime(fit_profile(vllm_observations()), force, engine="vllm")
    return EngineStepTime(fit_engine(engine(EIGHT, 0.0133)), force=force)


def config(kind: str, level: Level, output_tokens: int, force: bool = False) -> SimConfig:
    """A Poisson open loop (or closed loop) of 32-token prompts on vLLM's scheduler."""
    w = Workload.fixed(32, output_tokens, (level,), requests_per_level=200)
    return SimConfig(measured(kind, force), VLLM, w, description={"step_time_model": kind})


@MEASURED
def test_a_light_open_loop_on_vllm_runs_without_a_flag(kind: str) -> None:
    assert VLLM.max_batch == 128 and measured(kind).batch_limit == 16
    sim = run(config(kind, Level("rate", 1.0), 16))
    (sl,) = sim.levels
    assert len(sl.result.requests) == 200 and all(r.finish_s for r in sl.result.requests)
    assert 1 <= sl.result.most_decoders <= 16
    assert max(sl.result.timeline.batch) <= 16
    # the fit is stated at the batch the loop reached, not at max_num_seqs
    assert sim.fit_lines and not any("beyond the" in x for x in sim.fit_lines)


@MEASURED
def test_an_open_loop_past_twice_the_measured_batch_is_refused_naming_the_request(
    kind: str,
) -> None:
    cfg = config(kind, Level("rate", 50.0), 64)
    with pytest.raises(ConfigError) as e:
        run(cfg)
    said = e.value.worded(FLAG_NAMES)
    got = REFUSED.match(said)
    assert got is not None, said
    assert "\n" not in said and "{force}" in e.value.template
    # the request named was sent before the step it joined, and is one of the load's
    t, sent = float(got["t"]), float(got["sent"])
    assert 0 < sent <= t and 0 <= int(got["id"]) < 200
    assert int(got["batch"]) > 16  # one step may take in more than one new decoder
    if kind == "profile":  # the profile's advice for a vLLM server, as before
        assert "profile at --budget 2 (it measures vLLM's batches up to 32)" in said
        assert "cap the batch with --max-batch" in said


@MEASURED
def test_forced_the_heavy_open_loop_runs_and_says_so(kind: str) -> None:
    sim = run(config(kind, Level("rate", 50.0), 64, force=True))
    most = sim.levels[0].result.most_decoders
    assert most > 16
    assert any(f"{most}" in x and "(forced past 2x)" in x for x in sim.fit_lines)


@MEASURED
def test_a_closed_loop_past_the_limit_is_still_refused_before_it_runs(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*_: Any) -> None:
        raise AssertionError("simulated a closed loop the model cannot answer for")

    monkeypatch.setattr("inferlab.sim.simulated_run.simulate_level", never)
    with pytest.raises(ConfigError) as e:
        run(config(kind, Level("concurrency", 32), 16))
    said = e.value.worded(FLAG_NAMES)
    assert said.startswith("batch 32 is beyond 2x the largest batch") and "request" not in said
    assert "a limit of 16 decoders" in said and "--force" in said


def test_a_closed_loop_within_the_limit_runs() -> None:
    sim = run(config("profile", Level("concurrency", 16), 16))
    assert sim.levels[0].result.most_decoders <= 16


def test_the_cli_predicts_a_vllm_profile_at_one_request_per_second(
    run_cli: Any, tmp_path: Path
) -> None:
    d = str(vllm_profile(tmp_path))
    load = ("--prompt-tokens", "32", "--output-tokens", "16", "--requests-per-level", "100")
    code, out, err = run_cli(
        "simulate", "--profile", d, "--rate", "1", "--arrival", "poisson", *load
    )
    assert code == 0, err
    assert "vllm scheduler" in out and "beyond the profiled range" not in out
    heavy = ("--rate", "50", "--output-tokens", "64")
    code, out, err = run_cli("simulate", "--profile", d, *load, *heavy)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert re.search(r"at t = [\d.]+ s, request \d+ \(sent at [\d.]+ s\)", err), err
    assert re.search(r"batch \d+ is beyond 2x .* a limit of 16 decoders", err) and "--force" in err


def test_a_rate_search_is_refused_only_by_a_probe_that_passes_the_limit(
    run_cli: Any, tmp_path: Path
) -> None:
    d = str(vllm_profile(tmp_path))
    argv = ("simulate", "--profile", d, "--find-max-load", "rate", "--prompt-tokens", "32")
    argv += ("--output-tokens", "16")
    # a tight SLO: every probe's batch stays within 16, and the search finds its answer
    code, out, err = run_cli(*argv, "--slo", "tpot_p50=30ms")
    assert code == 0, err
    assert "max rate within the SLO" in out
    # a loose one: the search climbs to a rate whose batch passes 16; the refusal names it
    code, out, err = run_cli(*argv, "--slo", "tpot_p50=80ms")
    assert code == 2 and err.count("\n") == 1
    assert re.search(r"probing rate=[\d.]+/s: at t = [\d.]+ s, request \d+ ", err), err
    assert re.search(r"batch \d+ is beyond 2x .* a limit of 16 decoders", err)
