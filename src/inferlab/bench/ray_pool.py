"""N Ray actors as load workers (`bench --ray ADDRESS`), spread across the cluster's nodes.

Ray is an optional extra (`inferlab[ray]`), imported only here and only when
`--ray` is given. The actors run the same `WorkerHost` as local processes do;
records stream back through Ray's streaming generators as they complete.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from inferlab.bench.pool import SILENCE_LIMIT_S, STARTUP_TIMEOUT_S, WorkerLost
from inferlab.bench.worker import Message, WorkerHost, WorkerJob
from inferlab.errors import InferlabError

CLUSTER_START_S = 300.0  # `ray start` on a busy 2-core machine took 43 s here
CLUSTER_START_TRIES = 3


class RayPool:
    """N Ray actors, spread across the cluster's nodes."""

    latest: RayPool | None = None  # the last pool opened in this process (failure tests)

    def __init__(self, size: int, address: str) -> None:
        ray = _import_ray()
        self._ray = ray
        self._cluster: LocalCluster | None = None
        if not ray.is_initialized():
            self._cluster = _connect(ray, address)
        actor_cls = ray.remote(num_cpus=0, max_concurrency=2)(WorkerHost)
        self.size = size
        self._actors = [
            actor_cls.options(scheduling_strategy="SPREAD", max_restarts=0).remote()
            for _ in range(size)
        ]
        RayPool.latest = self

    def ping(self, worker: int) -> int:
        try:
            value: int = self._ray.get(
                self._actors[worker].ping.remote(), timeout=STARTUP_TIMEOUT_S
            )
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
        with contextlib.suppress(self._ray.exceptions.RayError):
            self._actors[worker].cancel.remote()

    def kill(self, worker: int) -> None:
        """For failure tests: what losing a node does to one actor."""
        self._ray.kill(self._actors[worker], no_restart=True)

    def close(self) -> None:
        for actor in self._actors:
            with contextlib.suppress(self._ray.exceptions.RayError):
                self._ray.kill(actor, no_restart=True)
        if self._cluster is not None:  # we started it: we stop it
            self._ray.shutdown()
            self._cluster.stop()


class LocalCluster:
    """A one-node Ray cluster started for this run (`--ray auto` with none running).

    Started with `ray start --head` and fixed, free ports rather than `ray.init()`:
    on a busy 2-core machine `ray.init()`'s raylet gives up waiting for its metrics
    agent to pick a port (seen here), while a stated port needs no wait.
    """

    def __init__(self) -> None:
        self.port = _free_port()
        self._ray_bin = _ray_binary()
        ports = (
            "--dashboard-agent-grpc-port",
            "--dashboard-agent-listen-port",
            "--metrics-export-port",
            "--runtime-env-agent-port",
        )
        cmd = [self._ray_bin, "start", "--head", f"--port={self.port}"]
        cmd += [f"{flag}={_free_port()}" for flag in ports]
        cmd += [f"--num-cpus={os.cpu_count() or 1}", "--include-dashboard=false"]
        cmd += ["--disable-usage-stats"]
        for _ in range(CLUSTER_START_TRIES):
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=CLUSTER_START_S, env=_cluster_env()
            )
            if done.returncode == 0:
                return
            # A loaded machine can miss Ray's fixed 30 s startup deadline: stop and try again.
            self.stop()
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
        raise InferlabError(
            f"could not start a local Ray cluster ({CLUSTER_START_TRIES} tries): {' '.join(tail)}"
        )

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        subprocess.run(
            [self._ray_bin, "stop", "--force"], capture_output=True, timeout=CLUSTER_START_S
        )


def _cluster_env() -> dict[str, str]:
    """The run's own cluster speaks the driver's auth mode (read once, when ray is imported).

    Ray 2.5x's `ray start` turns token auth on while a driver defaults to off; a
    cluster that lives for one run and is stopped after it matches the driver.
    """
    return {**os.environ, "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "disabled")}


def _connect(ray: Any, address: str) -> LocalCluster | None:
    """Join the named cluster, or RAY_ADDRESS's, or a running local one; else start one."""
    cluster = None
    target: str | None = address
    if address == "auto" and not os.environ.get("RAY_ADDRESS"):
        try:
            _init(ray, "auto")
            return None
        except ConnectionError:
            cluster = LocalCluster()
            target = cluster.address
    try:
        _init(ray, target)
    except Exception as e:
        if cluster is not None:
            cluster.stop()
        raise InferlabError(f"--ray {address}: cannot join the Ray cluster: {e}") from e
    return cluster


def _init(ray: Any, address: str | None) -> None:
    """ray.init, keeping inferlab's SIGTERM handling (ray.init replaces the handler).

    Ray's uv-run runtime env is switched off before ray is imported (_import_ray).
    """
    saved = signal.getsignal(signal.SIGTERM)
    ray.init(address=address, log_to_driver=False, configure_logging=False)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, saved)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _ray_binary() -> str:
    beside = Path(sys.executable).with_name("ray")
    found = str(beside) if beside.exists() else shutil.which("ray")
    if not found:
        raise InferlabError("--ray auto: the `ray` command is missing; install the ray extra")
    return found


def _import_ray() -> Any:
    # Ray reads these when imported. A driver under `uv run` would otherwise make every
    # actor start through `uv run` in a copy of the working directory (they died starting).
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    try:
        import ray
    except ImportError as e:
        raise InferlabError(
            "--ray needs Ray: install the extra (uv run --extra ray inferlab bench ..., "
            "or pip install 'inferlab[ray]')"
        ) from e
    return ray
