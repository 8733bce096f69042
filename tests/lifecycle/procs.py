"""Watching real processes from a test: children by /proc, liveness, ports, bounded waits."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def inferlab(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`inferlab ARGV` as its own process (the console script is `python -m inferlab.cli`)."""
    return subprocess.Popen(
        [sys.executable, "-m", "inferlab.cli", *argv],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(cond: Callable[[], bool], timeout_s: float, what: str, step_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(step_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # after "pid (comm) ": state, ppid, ...


def children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _stat(int(d.name))
            if st is not None and int(st[1]) == pid:
                out.append(int(d.name))
    return out


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far (0 once it is gone)."""
    st = _stat(pid)
    return 0.0 if st is None else (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


def gone(pid: int) -> bool:
    """Exited: no /proc entry, or a zombie waiting for a parent that may never reap it."""
    st = _stat(pid)
    return st is None or st[0] in ("Z", "X")


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def llama_child(pid: int) -> tuple[int, int]:
    """The llama-server that inferlab process `pid` started: (its pid, its port)."""
    for c in children(pid):
        argv = cmdline(c)
        if argv and argv[0].endswith("llama-server"):
            return c, int(argv[argv.index("--port") + 1])
    raise AssertionError(f"process {pid} has no llama-server child")


def port_free(port: int) -> bool:
    """Nothing listens, and a new server could bind it (with SO_REUSEADDR, as servers do)."""
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def must_die(pid: int, port: int, within_s: float = 60.0) -> None:
    """Assert the server dies by itself (a bounded wait: without the kernel's parent-death
    signal it would never die); kill it anyway so a failing test leaves none."""
    try:
        wait_for(lambda: gone(pid) and port_free(port), within_s, f"llama-server {pid} to die")
    finally:
        if not gone(pid):
            os.kill(pid, 9)
