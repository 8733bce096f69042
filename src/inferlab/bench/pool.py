"""Where workers live: N local processes (`--workers N`) or N Ray actors (`--ray`).

A pool only knows how to start its workers, read one worker's clock, stream
one worker's share and cancel it; `drive.py` does the rest the same way for
both. Processes are started with `spawn` (forking a process that holds
threads and an event loop is unsafe) and ignore SIGINT: Ctrl-C in a terminal
reaches the whole process group, and the driver, not each child, decides to
cancel, so completed records still reach the driver.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any, Protocol

from inferlab.bench.worker import Message, WorkerHost, WorkerJob

STARTUP_TIMEOUT_S = 120.0
# Workers send a heartbeat every second; one silent for this long is presumed lost.
SILENCE_LIMIT_S = 60.0


class WorkerLost(Exception):
    """A worker died (killed process, lost node) with requests in flight."""


class Pool(Protocol):
    size: int

    def ping(self, worker: int) -> int: ...
    def stream(self, worker: int, job: WorkerJob) -> Iterator[list[Message]]: ...
    def cancel(self, worker: int) -> None: ...
    def close(self) -> None: ...


def _child_main(conn: Connection) -> None:
    """A worker process: obey the driver's commands until it says stop or goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    host = WorkerHost()
    while True:
        try:
            cmd, arg = conn.recv()
        except (EOFError, OSError):
            return  # the driver is gone: nothing left to report to
        if cmd == "ping":
            conn.send(host.ping())
        elif cmd == "run":
            for batch in host.run(arg):
                conn.send(batch)
                if conn.poll() and _is_cancel(conn):
                    host.cancel()
            conn.send(None)  # end of this share
        elif cmd == "stop":
            return


def _is_cancel(conn: Connection) -> bool:
    cmd, _ = conn.recv()
    return bool(cmd == "cancel")


class ProcessPool:
    """N local worker processes; no dependency beyond the standard library."""

    def __init__(self, size: int) -> None:
        ctx = mp.get_context("spawn")
        self.size = size
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        for i in range(size):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=_child_main, args=(child,), name=f"inferlab-worker-{i}")
            p.daemon = True  # never outlives the driver
            p.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(p)

    def ping(self, worker: int) -> int:
        conn = self._conns[worker]
        conn.send(("ping", None))
        if not conn.poll(STARTUP_TIMEOUT_S):
            raise WorkerLost(f"worker {worker} did not answer a ping in {STARTUP_TIMEOUT_S:g} s")
        value: int = conn.recv()
        return value

    def stream(self, worker: int, job: WorkerJob) -> Iterator[list[Message]]:
        conn = self._conns[worker]
        conn.send(("run", job))
        while True:
            try:
                if not conn.poll(SILENCE_LIMIT_S):
                    raise WorkerLost(f"silent for {SILENCE_LIMIT_S:g} s")
                batch = conn.recv()
            except (EOFError, OSError) as e:
                code = self._procs[worker].exitcode
                raise WorkerLost(f"process exited (code {code})") from e
            if batch is None:
                return
            yield batch

    def cancel(self, worker: int) -> None:
        with contextlib.suppress(OSError, ValueError):  # already gone
            self._conns[worker].send(("cancel", None))

    def close(self) -> None:
        for conn in self._conns:
            with contextlib.suppress(OSError, ValueError):
                conn.send(("stop", None))
        deadline = time.monotonic() + 5.0
        for p in self._procs:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join(timeout=2.0)
