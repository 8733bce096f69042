"""Where workers live: N local processes (`--workers N`) or N Ray actors (`--ray`).

A pool only knows how to start its workers, read one worker's clock, stream
one worker's share and cancel it; `drive.py` does the rest the same way for
both. Processes are started with `spawn` (forking a process that holds
threads and an event loop is unsafe) and ignore SIGINT: Ctrl-C in a terminal
reaches the whole process group, and the driver, not each child, decides to
cancel, so completed records still reach the driver.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any, Protocol

from inferlab.bench.worker import Message, WorkerHost, WorkerJob
from inferlab.errors import InferlabError

STARTUP_TIMEOUT_S = 120.0
# A worker that says nothing for this long while it has requests out is presumed lost.
SILENCE_LIMIT_S = 900.0


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
        try:
            self._conns[worker].send(("cancel", None))
        except (OSError, ValueError):
            pass  # already gone

    def close(self) -> None:
        for conn in self._conns:
            try:
                conn.send(("stop", None))
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 5.0
        for p in self._procs:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join(timeout=2.0)


class RayPool:
    """N Ray actors, spread across the cluster's nodes."""

    def __init__(self, size: int, address: str) -> None:
        ray = _import_ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False}
            if address != "auto" or _ray_address_env():
                kwargs["address"] = address if address != "auto" else None
            ray.init(**kwargs)
        actor_cls = ray.remote(num_cpus=0, max_concurrency=2)(WorkerHost)
        self._ray = ray
        self.size = size
        self._actors = [
            actor_cls.options(scheduling_strategy="SPREAD", max_restarts=0).remote()
            for _ in range(size)
        ]

    def ping(self, worker: int) -> int:
        try:
            value: int = self._ray.get(self._actors[worker].ping.remote(), timeout=STARTUP_TIMEOUT_S)
        except self._ray.exceptions.RayError as e:
            raise WorkerLost(f"Ray actor {worker}: {type(e).__name__}") from e
        return value

    def stream(self, worker: int, job: WorkerJob) -> Iterator[list[Message]]:
        ray = self._ray
        gen = self._actors[worker].run.options(num_returns="streaming").remote(job)
        try:
            for ref in gen:
                yield ray.get(ref, timeout=SILENCE_LIMIT_S)
        except ray.exceptions.RayError as e:
            raise WorkerLost(f"Ray actor lost ({type(e).__name__})") from e

    def cancel(self, worker: int) -> None:
        try:
            self._actors[worker].cancel.remote()
        except self._ray.exceptions.RayError:
            pass

    def kill(self, worker: int) -> None:
        """For failure tests: what losing a node does to one actor."""
        self._ray.kill(self._actors[worker], no_restart=True)

    def close(self) -> None:
        for actor in self._actors:
            try:
                self._ray.kill(actor, no_restart=True)
            except self._ray.exceptions.RayError:
                pass


def _ray_address_env() -> bool:
    import os

    return bool(os.environ.get("RAY_ADDRESS"))


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise InferlabError(
            "--ray needs Ray: install the extra (uv run --extra ray inferlab bench ..., "
            "or pip install 'inferlab[ray]')"
        ) from e
    return ray
