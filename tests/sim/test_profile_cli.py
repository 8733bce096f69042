"""`simulate --profile DIR` and `plan --profile DIR`: the profiled step and request costs,
llama-server's scheduler at the profile's slots, and refusals for another server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferlab.jsonio import loads_strict, write_json
from inferlab.profile.record import SCHEMA_VERSION, ProfileRecord, ServerIdentity
from inferlab.testing.fake_steps import StepScript
from tests.profile.test_fit import scripted_observations

SCRIPT = StepScript()
GGUF = "/models/SmolLM2-135M-Instruct.Q4_1.gguf"


def profile_dir(
    tmp: Path, slots: int = 4, threads: int = 1, template: tuple[int, int, int] | None = None
) -> Path:
    d = tmp / "profile"
    d.mkdir(exist_ok=True)
    record = ProfileRecord(
        schema_version=SCHEMA_VERSION,
        created_unix_s=0.0,
        url="http://127.0.0.1:8080/v1",
        server=ServerIdentity(GGUF, "llamacpp", threads, slots, 1024, "b0"),
        budget=1,
        wall_s=100.0,
        observations=tuple(scripted_observations(SCRIPT)),
        chat_first_tokens=template[0] if template else None,
        chat_per_message_tokens=template[1] if template else None,
        chat_shared_tokens=template[2] if template else None,
    )
    write_json(d / "profile.json", record)
    return d


def test_a_lone_request_costs_its_arrival_cost_and_one_prefill_step(
    run_cli: Any, tmp_path: Path
) -> None:
    d = profile_dir(tmp_path)
    code, out, err = run_cli(
        "simulate", "--profile", str(d), "--users", "1", "--prompt-tokens", "100",
        "--output-tokens", "8", "--json",
    )  # fmt: skip
    assert code == 0, err
    s = loads_strict(out)
    assert s["simulation"]["step_time_model"] == "profiled"
    assert s["simulation"]["policy"] == "llama.cpp" and s["simulation"]["max_batch"] == 4
    assert s["simulation"]["request_overhead_s"] == pytest.approx(SCRIPT.request_overhead_s)
    arrival = SCRIPT.request_overhead_s + SCRIPT.request_per_prompt_token_s * 100
    ttft = arrival + SCRIPT.step_s([], [(100, 0)])
    assert s["levels"][0]["ttft_s"]["p50"] == pytest.approx(ttft, rel=1e-6)
    # one decoder whose context grows from 101 tokens: each gap a one-decoder step
    tpot = s["levels"][0]["tpot_s"]["p50"]
    assert SCRIPT.step_s([101], []) < tpot < SCRIPT.step_s([108], [])


def test_step_scale_multiplies_every_profiled_cost(run_cli: Any, tmp_path: Path) -> None:
    d = profile_dir(tmp_path)
    load = ("--users", "1", "--prompt-tokens", "100", "--output-tokens", "8", "--json")
    base = [
        run_cli("simulate", "--profile", str(d), *load, *x) for x in ((), ("--step-scale", "1.25"))
    ]
    assert [c for c, _, _ in base] == [0, 0], base
    plain, slow = (loads_strict(out) for _, out, _ in base)
    assert slow["simulation"]["step_scale"] == 1.25 and plain["simulation"]["step_scale"] == 1.0
    for q in ("ttft_s", "tpot_s"):  # one user: every step and the arrival cost, x1.25
        a, b = plain["levels"][0][q]["p50"], slow["levels"][0][q]["p50"]
        assert b == pytest.approx(1.25 * a, rel=1e-7)  # times are whole ns
    code, out, err = run_cli("simulate", "--step-scale", "1.1", "--users", "1")
    assert code == 2 and out == "" and "add --profile DIR" in err and err.count("\n") == 1


def test_a_profile_of_another_parallel_or_threads_is_refused_unless_forced(
    run_cli: Any, tmp_path: Path
) -> None:
    d = profile_dir(tmp_path)
    load = ("--users", "2", "--prompt-tokens", "32", "--output-tokens", "8")
    code, out, err = run_cli("simulate", "--profile", str(d), "--parallel", "8", *load)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "the server has 8 slot(s), the profile 4" in err
    assert "add --force" in err
    code, _, err = run_cli("simulate", "--profile", str(d), "--threads", "3", *load)
    assert code == 2 and "the server uses 3 thread(s), the profile 1" in err
    code, _, err = run_cli("simulate", "--profile", str(d), "--model", "llama-8b.gguf", *load)
    assert code == 2 and "the server's model is llama-8b.gguf" in err
    code, _, err = run_cli("simulate", "--profile", str(d), "--parallel", "8", "--force", *load)
    assert code == 0, err


def test_a_missing_profile_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    code, out, err = run_cli("simulate", "--profile", str(tmp_path), "--users", "1")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "inferlab profile" in err


def test_plan_states_its_basis_as_profiled(run_cli: Any, tmp_path: Path) -> None:
    d = profile_dir(tmp_path)
    code, out, err = run_cli(
        "plan", "--profile", str(d), "--rate", "5/s", "--slo", "ttft_p99=1s,tpot_p99=100ms",
        "--prompt-tokens", "64", "--output-tokens", "16", "--sim-duration", "20s", "--json",
    )  # fmt: skip
    assert code == 0, err
    plan = loads_strict(out)
    assert plan["basis"] == "profiled"
    assert plan["step_time"]["step_time_model"] == "profiled"
    # 4 slots; a 16-token reply takes 16 steps of ~42 ms at 4 decoders (20 ms + 4 x 4 ms +
    # 20 us x ~280 context tokens): a replica cannot hold more than 4 / 0.67 s = 6/s
    assert 0 < plan["max_rate_per_replica_per_s"] < 6
    code, out, _ = run_cli(
        "plan", "--profile", str(d), "--rate", "5/s", "--slo", "ttft_p99=1s",
        "--prompt-tokens", "64", "--output-tokens", "16", "--sim-duration", "20s",
    )  # fmt: skip
    assert code == 0 and "basis: the served engine's step and request costs profiled" in out
    # a profiled server is counted as what it was (a CPU llama-server is no GPU)
    assert "servers as profiled" in out and "GPUs" not in out


def test_a_simulated_level_states_its_prefix_cache_hit_ratio(run_cli: Any) -> None:
    # one slot, one user, three prompts of 96 tokens opening with the same 64: the slot
    # keeps the first prompt, the next two reuse its 64 shared tokens (128 of 288)
    code, out, err = run_cli(
        "simulate", "--policy", "llama.cpp", "--parallel", "1", "--model", "smollm2-135m",
        "--hardware", "h100-sxm", "--users", "1", "--requests-per-user", "3",
        "--prefix-groups", "1", "--prefix-tokens", "64", "--prompt-tokens", "96",
        "--output-tokens", "4", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert loads_strict(out)["levels"][0]["prefix_cache_hit_ratio"] == pytest.approx(128 / 288)
    code, out, _ = run_cli(
        "simulate", "--model", "smollm2-135m", "--hardware", "h100-sxm", "--users", "1",
        "--prompt-tokens", "96", "--output-tokens", "4", "--json",
    )  # fmt: skip
    assert "prefix_cache_hit_ratio" not in loads_strict(out)["levels"][0]  # nothing shared


def test_a_chat_level_says_the_profiles_template_and_its_predicted_hit_ratio(
    run_cli: Any, tmp_path: Path
) -> None:
    d = profile_dir(tmp_path, template=(30, 6, 24))
    code, out, err = run_cli(
        "simulate", "--profile", str(d), "--turns", "3", "--concurrency", "2",
        "--prompt-tokens", "40", "--output-tokens", "8", "--requests-per-level", "6",
    )  # fmt: skip
    assert code == 0, err
    assert (
        "chat template (the profile's): +30 tokens on a conversation's first message "
        "(24 alike in every conversation), +6 per earlier message" in out
    )
    # turn k's prompt: 30 + 40 + k x (40 + 8 + 2 x 6) = 70, 130, 190 tokens (780 in the
    # two conversations, whose first turns share one step: nothing cached yet); turn k + 1
    # finds turn k's prompt and 7 of its 8 reply tokens in its slot: 77 and 137 cached
    line = next(x for x in out.splitlines() if "prefix cache: predicted hit ratio" in x)
    assert f"ratio {2 * (77 + 137) / 780:.2f} " in line
