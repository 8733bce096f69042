"""The real llama-server never outlives the inferlab that started it: SIGTERM, SIGKILL, demo."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from tests.lifecycle.procs import gone, inferlab, llama_child, must_die, port_free, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _serve(tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    """`inferlab serve` run from an empty folder, XDG_STATE_HOME in tmp; returns its first line."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    proc = inferlab("serve", "--parallel", "1", "--ctx-size", "256", cwd=cwd, env=state)
    assert proc.stdout is not None
    # Flushed once healthy; "" if serve died first (its own start timeout bounds the wait).
    ready = proc.stdout.readline()
    if not ready.startswith("llama-server ready"):
        proc.kill()
        raise AssertionError(ready + proc.communicate(timeout=30)[1])
    return proc, ready


def test_sigterm_to_serve_stops_its_server_and_frees_the_port(tmp_path: Path) -> None:
    proc, ready = _serve(tmp_path)
    server, port = llama_child(proc.pid)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert gone(server) and port_free(port)
    # The log is in the state directory, printed on start and on the way out; none in cwd.
    logs = list((tmp_path / "state" / "inferlab" / "logs").glob(f"llama-server-*-{port}.log"))
    assert len(logs) == 1 and logs[0].stat().st_size > 0
    assert str(logs[0]) in ready
    assert err.strip().splitlines()[-1] == (
        f"inferlab serve: stopped by SIGTERM; llama-server stopped; its log is {logs[0]}"
    )
    assert list((tmp_path / "cwd").iterdir()) == []


def test_sigkill_to_serve_takes_its_server_down(tmp_path: Path) -> None:
    proc, _ = _serve(tmp_path)
    server, port = llama_child(proc.pid)
    proc.kill()  # no handler runs: only the kernel (PR_SET_PDEATHSIG) can stop the server now
    proc.communicate(timeout=10)
    must_die(server, port)


def test_sigkill_to_demo_mid_sweep_takes_its_server_down(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = inferlab(
        "demo",
        "--quick",
        "--no-engine-bench",  # the kill lands in the sweep: what comes before it need not run
        "--no-trace",
        "--concurrency",
        "1",
        "--requests-per-level",
        "50",  # far more than the wait below needs: the kill lands mid-sweep
        "--out",
        str(out),
        cwd=tmp_path,
        env={"INFERLAB_CACHE_DIR": str(tmp_path / "cache")},
    )
    records = out / "records.jsonl"
    try:
        wait_for(lambda: records.exists() and records.stat().st_size > 0, 240, "a record")
        server, port = llama_child(proc.pid)
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    must_die(server, port)
    assert (out / "llama-server.log").stat().st_size > 0  # its log is in the run folder
