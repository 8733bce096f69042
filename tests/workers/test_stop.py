"""Ctrl-C (SIGINT) to `inferlab bench --workers 2` mid-level: every worker stops, records kept."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.lifecycle.procs import children, gone, inferlab, wait_for

pytestmark = pytest.mark.slow  # the fake server and worker processes


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_ctrl_c_stops_every_worker_and_keeps_completed_records(
    fake_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = ["--url", fake_url, "--concurrency", "4", "--requests-per-level", "400"]
    proc = inferlab(
        "bench",
        *args,
        "--output-tokens",
        "20",
        "--workers",
        "2",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    records = out / "records.jsonl"
    try:
        wait_for(lambda: len(_lines(records)) >= 20, 120, "20 records from the workers")
        workers = children(proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    # no worker (nor multiprocessing's resource tracker) outlives the run: each exits once
    # its pipe to the driver closes, a moment after the driver itself
    assert workers
    wait_for(lambda: all(gone(pid) for pid in workers), 30, "every worker process to exit")
    kept = [json.loads(ln) for ln in _lines(records)]  # every line is a whole record
    assert len(kept) >= 20 and len({r["request_id"] for r in kept}) == len(kept)
    assert {r["worker"] for r in kept} == {0, 1}
    s = json.loads((out / "summary.json").read_text())
    assert s["interrupted"] is True
    assert s["levels"][0]["requests_measured"] + s["levels"][0]["requests_warmup"] == len(kept)
