"""Inputs that used to give a wrong answer without a word: each is now refused (exit 2, one
line saying what to fix) or fails the run (exit 1), through the CLI as a user types it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.bounded_app import Script, make_app, serve
from tests.clirun import RunCli

SMALL = [
    "--concurrency", "1,2", "--requests-per-level", "2", "--warmup", "0",
    "--prompt-tokens", "8", "--output-tokens", "4", "--no-scrape", "--no-plots",
]  # fmt: skip


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("verb", [["bench", "--url", "http://127.0.0.1:9/v1"], ["simulate"]])
def test_a_time_objective_without_a_unit_is_refused(run_cli: RunCli, verb: list[str]) -> None:
    code, out, err = run_cli(*verb, "--slo", "tpot=50")
    line = _one_line(err)
    assert code == 2 and out == ""
    assert "tpot=50" in line and "needs a unit" in line and "ms" in line and "min" in line


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["floor", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--measured-step", "14"],
         "--measured-step"),
        (["watch", "--url", "http://127.0.0.1:9", "--interval", "2"], "--interval"),
        (["bench", "--url", "http://127.0.0.1:9/v1", "--request-timeout", "30"],
         "--request-timeout"),
        (["floor", "--weight-bytes", "16", "--hardware", "h100-sxm"], "--weight-bytes"),
        (["capacity", "--model", "llama-3-8b", "--memory", "80", "--context", "8"], "--memory"),
    ],
)  # fmt: skip
def test_a_bare_number_for_a_time_or_size_flag_is_refused(
    run_cli: RunCli, argv: list[str], flag: str
) -> None:
    code, _, err = run_cli(*argv)
    line = _one_line(err)
    assert code == 2 and flag in line and "has no unit" in line


def test_zero_needs_no_unit(run_cli: RunCli) -> None:
    code, out, err = run_cli(
        "floor", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--overhead", "0", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["floor"] if "floor" in out else json.loads(out)


def test_a_url_without_v1_is_refused_before_the_run(run_cli: RunCli, tmp_path: Path) -> None:
    """llama-server answers /models and /completions at its root too, the latter in its own
    stream format: every request would fail. The first request shows it; nothing is written."""
    script = Script(root_paths=True)
    with serve(make_app(script)) as base:
        code, _, err = run_cli("bench", "--url", base, *SMALL, "--out", str(tmp_path / "r"))
    line = _one_line(err)
    assert code == 2
    assert "not an OpenAI stream" in line and f"--url at the OpenAI base, e.g. {base}/v1" in line
    assert script.completions == 0 and not (tmp_path / "r").exists()


def test_an_address_whose_completions_answer_404_is_refused(
    run_cli: RunCli, tmp_path: Path
) -> None:
    with serve(make_app(Script())) as base:
        code, _, err = run_cli(
            "bench", "--url", f"{base}/v1", "--api", "chat", *SMALL, "--out", str(tmp_path / "r")
        )
    line = _one_line(err)
    assert code == 2 and "HTTP 404" in line and "/v1/chat/completions" in line
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_level_where_every_request_failed_exits_1(run_cli: RunCli, tmp_path: Path) -> None:
    script = Script(fail_from=1)  # the first-stream check passes, then every request fails
    with serve(make_app(script)) as base:
        code, _, err = run_cli("bench", "--url", f"{base}/v1", *SMALL, "--out", str(tmp_path / "a"))
    assert code == 1
    assert "every request of c=1 failed" in err and "--keep-going" in err
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert [lv["label"] for lv in summary["levels"]] == ["c=1"]  # the sweep stopped there
    assert any(w["code"] == "all_failed" for w in summary["warnings"])


@pytest.mark.slow
def test_keep_going_goes_on_and_exits_0(run_cli: RunCli, tmp_path: Path) -> None:
    script = Script(fail_from=1)
    with serve(make_app(script)) as base:
        code, _, err = run_cli(
            "bench", "--url", f"{base}/v1", *SMALL, "--keep-going", "--out", str(tmp_path / "k")
        )
    assert code == 0, err
    summary = json.loads((tmp_path / "k" / "summary.json").read_text())
    assert [lv["label"] for lv in summary["levels"]] == ["c=1", "c=2"]
    assert all(lv["requests_ok"] == 0 for lv in summary["levels"])
