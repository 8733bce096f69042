"""`inferlab bench` from the command line: bad input is one clear message and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.engines.llama_server import free_port
from inferlab.jsonio import loads_strict
from tests.clirun import RunCli

pytestmark = pytest.mark.slow  # the scripted fake server, and bench as a real process


def test_unreachable_url(run_cli: RunCli, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    code, out, err = run_cli("bench", "--url", url, "--out", str(tmp_path))
    assert code == 2
    assert "cannot reach" in err and "is the server running" in err
    assert "Traceback" not in err
    assert out == ""  # not even the empty line a progress bar that never started wrote


def test_wrong_model_name(run_cli: RunCli, fake_url: str, tmp_path: Path) -> None:
    code, _, err = run_cli("bench", "--url", fake_url, "--model", "gpt-7", "--out", str(tmp_path))
    assert code == 2
    assert "model 'gpt-7' is not served" in err and "fake" in err


def test_not_an_openai_api(run_cli: RunCli, fake_url: str, tmp_path: Path) -> None:
    root = fake_url.removesuffix("/v1") + "/health"  # answers, but not /models
    code, _, err = run_cli("bench", "--url", root, "--out", str(tmp_path))
    assert code == 2
    assert "not an OpenAI-compatible API" in err


def test_bad_concurrency_list(run_cli: RunCli, fake_url: str) -> None:
    code, _, err = run_cli("bench", "--url", fake_url, "--concurrency", "1,two")
    assert code == 2 and "--concurrency" in err


def test_cli_sweep_strict_and_outputs(run_cli: RunCli, fake_url: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, stdout, _ = run_cli(
        "bench",
        "--url",
        fake_url,
        "--model",
        "early-stop",
        "--concurrency",
        "1,2",
        "--requests-per-level",
        "2",
        "--output-tokens",
        "8",
        "--prompt-tokens",
        "4",
        "--out",
        str(out),
        "--floor-model",
        "smollm2-135m",
        "--floor-bandwidth",
        "20GB/s",
        "--strict",
    )
    assert code == 1  # --strict: early stops fail the run
    assert "early_stop" in stdout
    s = json.loads((out / "summary.json").read_text())
    assert [lv["label"] for lv in s["levels"]] == ["c=1", "c=2"]
    assert all(lv["mbu"] > 0 for lv in s["levels"])
    for png in ("throughput_vs_tpot.png", "gap_cdf.png", "mbu.png"):
        assert (out / png).stat().st_size > 10_000, png


def test_api_key_is_never_written(
    run_cli: RunCli, fake_url: str, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    code, _, _ = run_cli(
        "bench",
        "--url",
        fake_url,
        "--concurrency",
        "1",
        "--requests-per-level",
        "1",
        "--output-tokens",
        "4",
        "--out",
        str(tmp_path),
        "--no-plots",
    )
    assert code == 0
    for f in tmp_path.iterdir():
        assert "sk-secret-123" not in f.read_text()


def test_ctrl_c_keeps_records_and_writes_summary(fake_url: str, tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inferlab.cli",
            "bench",
            "--url",
            fake_url,
            "--concurrency",
            "2",
            "--requests-per-level",
            "200",
            "--output-tokens",
            "20",
            "--out",
            str(out),
            "--no-plots",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    records = out / "records.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # wait until some requests have completed
        if records.exists() and len(records.read_text().splitlines()) >= 6:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    s = json.loads((out / "summary.json").read_text())
    assert s["interrupted"] is True
    assert any(w["code"] == "interrupted" for w in s["warnings"])
    done = len(records.read_text().splitlines())
    assert done >= 6
    assert s["levels"][0]["requests_ok"] + s["levels"][0]["requests_warmup"] >= done - 2


def test_json_prints_the_summary_alone(run_cli: RunCli, fake_url: str, tmp_path: Path) -> None:
    code, stdout, err = run_cli(
        "bench",
        "--url",
        fake_url,
        "--model",
        "fake",
        "--concurrency",
        "1",
        "--requests-per-level",
        "2",
        "--output-tokens",
        "4",
        "--prompt-tokens",
        "4",
        "--no-plots",
        "--out",
        str(tmp_path / "run"),
        "--json",
    )
    assert code == 0, err
    s = loads_strict(stdout)  # the whole of stdout parses: the table went to stderr
    assert s["levels"][0]["requests_ok"] == 2
    assert "inferlab sweep" in err


def test_engine_baseline_splits_levels_and_flags_a_server_faster_than_its_engine(
    run_cli: RunCli,
    fake_url: str,
    tmp_path: Path,
) -> None:
    from inferlab.jsonio import write_json
    from tests.engines.baseline import engine

    # The fake server streams a token every 10 ms; this "engine" needs 20 ms per step.
    base = tmp_path / "eb"
    base.mkdir()
    write_json(base / "engine_bench.json", engine({1: 0.020, 2: 0.025}, 0.020, output_tokens=8))
    out = tmp_path / "run"
    code, stdout, _ = run_cli(
        "bench", "--url", fake_url, "--concurrency", "1,2", "--requests-per-level", "2",
        "--prompt-tokens", "32", "--output-tokens", "8", "--out", str(out),
        "--floor-model", "smollm2-135m", "--floor-bandwidth", "20GB/s",
        "--engine-baseline", str(base), "--strict",
    )  # fmt: skip
    assert code == 1  # --strict: the warning fails the run
    s = json.loads((out / "summary.json").read_text())
    assert [lv["engine"]["engine_step_time_s"] for lv in s["levels"]] == [0.020, 0.025]
    flagged = [w["level"] for w in s["warnings"] if w["code"] == "faster_than_engine"]
    assert flagged == ["c=1", "c=2"]
    assert s["engine_baseline"]["output_tokens"] == 8
    assert (out / "time_split.png").stat().st_size > 0
    assert "engine" in stdout  # the engine-alone column (its header on two lines)
