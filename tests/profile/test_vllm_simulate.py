"""`simulate --profile DIR` on a profile of a vLLM server: no slots to count, so the batch
is limited by the batches the profile measured (2x them, as for llama-server), and without
--policy the server's scheduler knobs drive vLLM's scheduler (served_policy)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from inferlab.errors import ConfigError
from inferlab.jsonio import loads_strict, write_json
from inferlab.profile.record import SCHEMA_VERSION, Observation, ProfileRecord, ServerIdentity
from inferlab.profile.vllm_server import parse_counters, settings_from
from inferlab.sim.steptime.choice import PolicyChoice, ServedProfile, StepChoice
from inferlab.sim.steptime.profile import served_policy
from inferlab.testing.fake_steps import StepScript
from tests.profile.test_fit import scripted_observations

SCRIPT = StepScript()
HERE = Path(__file__).parent
SETTINGS = settings_from(
    json.loads((HERE / "fixtures" / "v1-models-vllm-0.32.json").read_text()),
    "smollm2",
    "0.32.0",
    parse_counters((HERE.parent / "servermetrics/fixtures/vllm/metrics-idle.txt").read_text()),
)


def vllm_observations() -> list[Observation]:
    """The scripted observations as a vLLM profile has them: no split probe, one pass a
    step, decode batches up to 8."""
    keep = [o for o in scripted_observations(SCRIPT) if o.probe != "split"]
    out = [replace(o, ubatches=None, decode_groups=None) for o in keep if o.probe != "mixed"]
    mixed = [o for o in keep if o.probe == "mixed"]
    # a mixed step on vLLM is one pass: its time without the scripted extra ubatch
    out += [replace(o, median_s=o.median_s - SCRIPT.per_ubatch_s, ubatches=None) for o in mixed]
    eight = SCRIPT.step_s([40] * 8, [])
    out.append(Observation("decode", 8, 320, 0, 0, eight, eight, eight, 60))
    return out


def vllm_profile(tmp: Path) -> Path:
    d = tmp / "vp"
    d.mkdir(exist_ok=True)
    server = ServerIdentity("smollm2", "vllm", build="0.32.0", vllm=SETTINGS)
    record = ProfileRecord(
        SCHEMA_VERSION, 0.0, "http://127.0.0.1:18090/v1", server, 1, 60.0,
        tuple(vllm_observations()),
    )  # fmt: skip
    write_json(d / "profile.json", record)
    return d


def test_a_vllm_profile_simulates_c4_without_slots(run_cli: Any, tmp_path: Path) -> None:
    d = vllm_profile(tmp_path)
    load = ("--prompt-tokens", "100", "--output-tokens", "8", "--requests-per-level", "8")
    code, out, err = run_cli("simulate", "--profile", str(d), "--concurrency", "4", *load, "--json")
    assert code == 0, err
    s = loads_strict(out)["simulation"]
    # vLLM's scheduler at the server's knobs: max_num_seqs, its token budget, its KV
    # blocks (less the null one) of 128 tokens
    assert s["policy"] == "vllm"
    assert (s["max_batch"], s["chunk_tokens"], s["block_tokens"]) == (128, 2048, 128)
    assert s["kv_capacity_tokens"] == 363 * 128
    assert s["vllm"]["block_size"] == 128 and s["engine"] == "vllm"
    assert s["batch_limit"] == 16  # 2x the largest batch measured (8)
    code, out, err = run_cli("simulate", "--profile", str(d), "--concurrency", "32", *load)
    assert code == 2 and out == ""
    assert "batch 32 is beyond 2x the largest batch the profile measured (8)" in err
    said = (
        "profile at --budget 2 (it measures vLLM's batches up to 32), cap the batch with "
        "--max-batch or add --force to extrapolate anyway"
    )
    assert said in err


def test_the_served_policy_applies_to_a_vllm_profile_without_policy_only(tmp_path: Path) -> None:
    from inferlab.profile.record import load_profile

    record = load_profile(vllm_profile(tmp_path))
    step = StepChoice(profile=ServedProfile(record, "vp"))
    p = served_policy(record, PolicyChoice(max_batch=16, chunked_prefill=512), step)
    assert p is not None
    assert (p.name, p.max_batch, p.chunk_tokens, p.block_tokens) == ("vllm", 16, 512, 128)
    assert served_policy(record, PolicyChoice(name="continuous"), step) is None  # named
    llama = replace(record, server=ServerIdentity("m.gguf", "llamacpp", 1, 4, 1024))
    assert served_policy(llama, PolicyChoice(), step) is None  # llama.cpp's: its slots
    with pytest.raises(ConfigError) as e:
        served_policy(record, PolicyChoice(), replace(step, knobs=(("parallel", 4),)))
    said = "--parallel apply to {policy} llama.cpp only: the profile is of a vLLM server"
    assert e.value.template == said
