"""Bounded simulations, bad load input refused in one line, strict --json, one run per --out,
and the simulated summary equal to the record-by-record one."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.jsonio import loads_strict
from inferlab.load.spec import Level
from inferlab.metrics.level_summary import summarize_level
from inferlab.sim.engine import simulate
from inferlab.sim.limits import Limits, SimulationTooLarge
from inferlab.sim.output import summarize_result, to_records
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime.calibrated import FittedStepTime
from inferlab.sim.users import ClosedLoop
from tests.clirun import RunCli
from tests.sim.test_simulator import open_arrivals

M = ("--model", "llama-3-8b", "--hardware", "h100-sxm")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--users", "10000000"], "over the limit of 1000000 (raise it with --max-requests"),
        (["--users", "1", "--output-tokens", "1000", "--max-steps", "100"], "with --max-steps"),
        (["--rate", "1e9/s"], "--max-requests"),
        (["--users", "2", "--block-tokens", "0"], "--block-tokens must be between 1 and"),
        (["--users=-3"], "--users must be >= 1"),
        (["--users", "2", "--requests-per-user=-1"], "--requests-per-user must be >= 1"),
        (["--users", "2", "--chunked-prefill=-5"], "--chunked-prefill must be >= 1"),
        (["--users", "2", "--max-batch", "0"], "--max-batch must be >= 1"),
        (["--rate", "5/s", "--duration", "0"], "--duration must be positive"),
        (["--rate", "5/s", "--arrival", "gamma", "--gamma-shape", "0"], "--gamma-shape"),
        (["--users", "2", "--prompt-tokens", "0"], "--prompt-tokens '0'"),
        (["--users", "2", "--inject-prompt=-5@1s"], "--inject-prompt"),
    ],
)
def test_refused_in_one_line(run_cli: RunCli, args: list[str], needle: str) -> None:
    code, out, err = run_cli("simulate", *M, *args)
    assert code == 2 and needle in err and err.count("\n") == 1, err


def test_step_limit_stops_a_running_simulation() -> None:
    with pytest.raises(SimulationTooLarge, match="limit of 50 engine steps"):
        simulate(
            [],
            FittedStepTime(0.01, 0, 0),
            Policy("sequential"),
            ClosedLoop(3, 1, 10, 30),
            max_steps=50,
        )


def test_limits_refuse_nan() -> None:
    with pytest.raises(SimulationTooLarge):
        Limits().check_requests(float("nan"), "--rate x --duration")


def test_negative_trace_tokens_name_the_file_and_line(run_cli: RunCli, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"arrival_s": 0.1, "prompt_tokens": 10, "output_tokens": 5}\n'
        '{"arrival_s": 0.2, "prompt_tokens": -10, "output_tokens": 5}\n'
    )
    code, _, err = run_cli("simulate", *M, "--trace", str(trace))
    assert code == 2 and f"{trace}:2:" in err and "prompt_tokens" in err  # file, row, column


@pytest.mark.parametrize("duration", ["nans", "0", "-1s", "infs", "50"])
def test_plan_sim_duration_is_named(run_cli: RunCli, duration: str) -> None:
    code, _, err = run_cli(
        "plan", *M, "--rate", "5/s", "--slo", "ttft_p99=1s", f"--sim-duration={duration}"
    )
    assert code == 2 and "--sim-duration" in err and len(err.strip().splitlines()) == 1, err
    assert "rate" not in err.split("(")[0]


def test_json_alone_on_stdout_and_one_run_per_folder(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ("simulate", *M, "--users", "3", "--output-tokens", "20", "--out", str(out))
    code, stdout, err = run_cli(*args, "--json")
    assert code == 0, err
    assert loads_strict(stdout)["levels"][0]["requests_ok"] == 3
    assert "TTFT" in err  # the table went to stderr
    code, _, err = run_cli(*args)
    assert code == 2 and "already holds a run" in err
    code, _, err = run_cli(*args, "--append-run")
    assert code == 0 and (out / "run-1" / "records.jsonl").exists()
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 3  # the second run did not append to the first
    code, _, err = run_cli(*args, "--overwrite")
    assert code == 0 and not (out / "run-1").exists()


@pytest.mark.parametrize("capacity", [None, 2000])
def test_simulated_summary_equals_the_record_by_record_one(capacity: int | None) -> None:
    arr = open_arrivals(40, 3, "uniform:1:400", "uniform:1:80", seed=5)
    policy = Policy("continuous", 64, 128, capacity)
    res = simulate(arr, FittedStepTime(0.001, 1e-4, 1e-5), policy, ClosedLoop(5, 2, 50, 40), 2.0)
    assert any(r.finish_s is None for r in res.requests)  # cut off at 2 s: some unfinished
    expected = summarize_level("x", "rate", 40.0, to_records(res, "x")).to_json()
    got = summarize_result(res, Level("rate", 40.0, "x")).to_json()
    assert {k: got[k] for k in expected} == expected
    assert got["preemptions"] == res.preemptions and got["steps"] == res.steps
