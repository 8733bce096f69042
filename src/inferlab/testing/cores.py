"""Benchmarks' hands on the machine's cores: pin a process (every thread of it) to one
core, and make that core slower on purpose with a duty-cycled busy loop in a process of
its own (`nice` does not act across sessions, so only a duty cycle sets the share taken)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

_LOOP = """
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
busy, period = float(sys.argv[2]) / 1e3, float(sys.argv[3]) / 1e3
end = time.monotonic() + float(sys.argv[4])
while time.monotonic() < end:
    t = time.perf_counter()
    while time.perf_counter() - t < busy:
        pass
    time.sleep(max(period - busy, 0.0))
"""


def pin(pid: int, core: int) -> None:
    """Every thread of the process on `core` (a pid's affinity is its main thread's)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(task.name), {core})


@contextlib.contextmanager
def busy_loop(
    core: int, busy_ms: float, period_ms: float, limit_s: float = 900.0
) -> Iterator[None]:
    """A loop on `core` busy `busy_ms` of every `period_ms` while the block runs (and at
    most `limit_s`, should this process die without stopping it)."""
    args = [str(core), str(busy_ms), str(period_ms), str(limit_s)]
    proc = subprocess.Popen([sys.executable, "-c", _LOOP, *args])
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)
