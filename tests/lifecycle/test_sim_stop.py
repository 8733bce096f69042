"""A CPU-bound verb (no event loop, no server) stops on SIGTERM/SIGHUP like on Ctrl-C."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.lifecycle.procs import cpu_s, inferlab, wait_for

pytestmark = pytest.mark.slow  # simulate as a real process, stopped


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_simulate_stops_with_the_signal_s_exit_code(tmp_path: Path, sig: int, code: int) -> None:
    load = ["--policy", "continuous", "--rate", "50/s", "--duration", "5h"]  # minutes of work
    model = ["--model", "llama-3-8b", "--hardware", "h100-sxm"]
    proc = inferlab("simulate", *model, *load, "--out", str(tmp_path / "sim"), cwd=tmp_path)
    try:  # past the imports (~1 s of CPU) and into the simulation
        wait_for(lambda: cpu_s(proc.pid) > 2.5, 60, "simulate to be simulating", step_s=0.2)
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    name = signal.Signals(sig).name
    line = f"inferlab simulate: stopped by {name}; nothing was written"
    assert err.strip().splitlines() == [line]
    assert out == "" and not (tmp_path / "sim").exists()  # a partial simulation is no result
