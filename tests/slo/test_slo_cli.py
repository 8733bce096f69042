"""--slo, --find-max-load and plan's basis through the CLI: bad input is one line and exit 2
with nothing on stdout under --json; the search's three endings; the saturation verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

URL = "http://127.0.0.1:9/v1"  # never reached: the flags are refused first
SIM = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm"]


def one_line_refusal(run_cli, *argv: str) -> str:  # type: ignore[no-untyped-def]
    code, out, err = run_cli(*argv, "--json")
    assert code == 2, err
    assert out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return str(err)


@pytest.mark.parametrize("verb", [["bench", "--url", URL], SIM])
def test_unknown_objective_lists_the_accepted(run_cli, verb: list[str]) -> None:  # type: ignore[no-untyped-def]
    err = one_line_refusal(run_cli, *verb, "--slo", "latency=1s")
    assert "'latency'" in err and "ttft, tpot, e2e, itl_max, ttfo" in err


@pytest.mark.parametrize("verb", [["bench", "--url", URL], SIM])
def test_a_unit_that_does_not_fit(run_cli, verb: list[str]) -> None:  # type: ignore[no-untyped-def]
    err = one_line_refusal(run_cli, *verb, "--slo", "ttft=50tok")
    assert "ttft=50tok" in err and "is a time" in err


def test_search_needs_an_slo(run_cli) -> None:  # type: ignore[no-untyped-def]
    err = one_line_refusal(run_cli, "bench", "--url", URL, "--find-max-load", "concurrency")
    assert "--find-max-load needs --slo" in err


def test_search_of_one_load_with_the_other(run_cli) -> None:  # type: ignore[no-untyped-def]
    err = one_line_refusal(
        run_cli, "bench", "--url", URL, "--find-max-load", "concurrency", "--rate", "4",
        "--slo", "tpot_p50=50ms",
    )  # fmt: skip
    assert "leave out --rate" in err


def test_min_attainment_range(run_cli) -> None:  # type: ignore[no-untyped-def]
    err = one_line_refusal(
        run_cli, "bench", "--url", URL, "--slo", "ttft=1s", "--min-attainment", "2"
    )
    assert "--min-attainment" in err


def test_simulated_search_finds_a_measured_level(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "s"
    code, stdout, err = run_cli(
        *SIM, "--find-max-load", "concurrency", "--slo", "tpot_p50=4.6ms",
        "--output-tokens", "64", "--out", str(out), "--json",
    )  # fmt: skip
    assert code == 0, err
    s = json.loads(stdout)
    found = s["max_load"]
    passing = [t["value"] for t in found["levels_tried"] if t["pass"]]
    assert found["value"] == max(passing) and found["status"] in ("found", "levels_exhausted")
    assert len(s["levels"]) == len(found["levels_tried"]) <= 8
    assert "max concurrency within the SLO:" in err
    assert json.loads((out / "summary.json").read_text())["max_load"] == found


def test_no_level_meets_exit_0_or_1_under_strict(run_cli) -> None:  # type: ignore[no-untyped-def]
    argv = [*SIM, "--find-max-load", "concurrency", "--slo", "tpot_p50=1ms"]
    code, out, _ = run_cli(*argv)
    assert code == 0
    assert "no level meets the SLO: the lowest tried, concurrency 1, already fails" in out
    assert "tpot_p50:" in out  # the best level's numbers
    code, _, _ = run_cli(*argv, "--strict")
    assert code == 1


def test_highest_still_passes_says_what_to_raise(run_cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(
        *SIM, "--find-max-load", "concurrency", "--slo", "tpot_p50=1s", "--search-max-levels", "2",
        "--output-tokens", "16",
    )  # fmt: skip
    assert code == 0
    assert "at least 2" in out and "bound was not found: raise --search-max-levels (now 2)" in out


def test_overloaded_rate_is_named_and_long_durations_read(run_cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_cli(
        *SIM, "--rate", "200/s", "--duration", "20s", "--prompt-tokens", "1000",
        "--output-tokens", "100", "--json",
    )  # fmt: skip
    assert code == 0, err
    lv = json.loads(out)["levels"][0]
    sat = lv["saturation"]
    assert sat["verdict"] == "overloaded" and sat["queue_growth_per_s"] > 0.1 * 200
    assert sat["completed_rate_per_s"] < 0.8 * sat["offered_rate_per_s"]
    assert "grow with the run's length" in err and "stable: completed >= 95%" in err
    assert " s " in err.split("TTFT", 1)[1].split("\n")[0]  # seconds, not 135547.2 ms


def test_plan_states_its_basis(run_cli) -> None:  # type: ignore[no-untyped-def]
    argv = ["plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--rate", "5/s",
            "--slo", "ttft_p99=1s,tpot_p99=50ms", "--sim-duration", "10s"]  # fmt: skip
    code, out, err = run_cli(*argv)
    assert code == 0, err
    assert (
        "at the floor: an upper bound on what one replica sustains, so a lower bound on replicas"
        in out
    )
    assert "--calibrate" in out
    code, out, _ = run_cli(*argv, "--json")
    assert json.loads(out)["basis"] == "floor"
    code, out, _ = run_cli(*argv, "--efficiency", "0.5", "--json")
    assert json.loads(out)["basis"] == "efficiency"
