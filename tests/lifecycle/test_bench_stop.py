"""SIGTERM/SIGHUP to a real `inferlab bench` mid-level, against the scripted fake server."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.testing.fake_server import running_fake_server
from tests.clirun import RunCli
from tests.lifecycle.procs import inferlab, wait_for

pytestmark = pytest.mark.slow  # bench as a real process, stopped


@pytest.fixture(scope="module")
def fake_url() -> Iterator[str]:
    with running_fake_server(ttft=0.02, tpot=0.01) as url:
        yield url


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_stop_mid_level_keeps_records_and_writes_summary(
    run_cli: RunCli,
    fake_url: str,
    tmp_path: Path,
    sig: int,
    code: int,
) -> None:
    out = tmp_path / "run"
    # c=1: 1 warm-up + 30 measured, ~0.13 s each (10 tokens), so ~4 s; c=2 (2 + 30 on two
    # streams) then runs ~2 s: the signal goes in as soon as c=2's first record lands.
    args = ["--url", fake_url, "--concurrency", "1,2", "--requests-per-level", "30"]
    proc = inferlab("bench", *args, "--output-tokens", "10", "--out", str(out), cwd=tmp_path)
    records, summary = out / "records.jsonl", out / "summary.json"
    try:
        wait_for(lambda: summary.exists() and len(_lines(records)) > 31, 60, "c=2 to start")
    finally:
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert f"inferlab bench: stopped by {signal.Signals(sig).name}" in last and str(out) in last
    s = json.loads(summary.read_text())
    assert s["interrupted"] is True
    stopped = [w["message"] for w in s["warnings"] if w["code"] == "interrupted"]
    assert stopped == [f"the run stopped early: interrupted by {signal.Signals(sig).name}"]
    kept = [json.loads(ln) for ln in _lines(records)]  # every line is a whole record
    assert all(r["error"] is None for r in kept)  # cancelled in-flight requests are not records
    per_level = {lv["label"]: lv["requests_measured"] + lv["requests_warmup"] for lv in s["levels"]}
    assert per_level["c=1"] == 31
    assert 0 < per_level["c=2"] < 32  # stopped mid-level, with c=2's completed records kept
    for label, n in per_level.items():  # the summary counts exactly what the file kept
        assert n == sum(1 for r in kept if r["level"] == label), label
    rc, _, _ = run_cli("report", str(out))
    assert rc == 0 and (out / "report.html").stat().st_size > 1000
