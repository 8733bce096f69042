"""kill -9 mid-level: every completed request is a whole line, and `report` renders the
partial run, saying what it rebuilt and what is missing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clirun import RunCli

pytestmark = pytest.mark.slow  # bench as a real process, killed


def _wait_for(pred: Callable[[], bool], timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _bench_then_kill(
    url: str, out: Path, levels: str, kill_when: Callable[[list[str]], bool]
) -> None:
    """bench LEVELS against the module's fake server (hardening/conftest.py), SIGKILLed
    once the records on disk satisfy kill_when."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "inferlab.cli", "bench", "--url", url, "--model", "fake",
         "--concurrency", levels, "--requests-per-level", "40", "--warmup", "0",
         "--prompt-tokens", "4", "--output-tokens", "20", "--no-plots", "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert _wait_for(lambda: kill_when(_lines(out / "records.jsonl")))
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL


def test_kill_during_first_level_report_rebuilds(
    run_cli: RunCli, fake_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _bench_then_kill(fake_url, out, "2", lambda lines: len(lines) >= 5)
    assert not (out / "summary.json").exists()  # killed before the level's summary
    lines = _lines(out / "records.jsonl")
    whole = [json.loads(x) for x in lines[:-1]]  # every line but a possibly torn last one
    assert len(whole) >= 4 and all(r["level"] == "c=2" for r in whole)
    code, stdout, err = run_cli("report", str(out))
    assert code == 0, err
    assert "no summary.json" in stdout and "rebuilt from records.jsonl" in stdout
    assert (out / "report.html").exists()
    assert "Traceback" not in err


def test_kill_during_second_level_keeps_both(
    run_cli: RunCli, fake_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _bench_then_kill(
        fake_url, out, "1,4", lambda lines: sum('"level":"c=4"' in x for x in lines) >= 5
    )
    summary = json.loads((out / "summary.json").read_text())
    assert [lv["label"] for lv in summary["levels"]] == ["c=1"]  # written when c=1 ended
    from inferlab.metrics.runfolder import load_summary

    full = load_summary(out)
    c4 = [json.loads(x) for x in _lines(out / "records.jsonl")[:-1]]
    c4 = [r for r in c4 if r["level"] == "c=4"]
    rebuilt = full.levels[1]
    assert rebuilt.label == "c=4" and rebuilt.interrupted is True
    # the rebuilt level counts the records on disk (the last line may have been torn)
    done = rebuilt.requests_ok + rebuilt.requests_failed
    assert done in (len(c4), len(c4) + 1)
    code, stdout, err = run_cli("report", str(out))
    assert code == 0, err
    assert "level c=4 was cut short" in stdout
