"""The machine canary (bench/machine_canary.py): a fixed matmul and memory read, run on the
cores of the process listening on the server's port, its reading kept beside each drift
canary's (bench/canary.py) and its word added to a machine_drift warning.

No test here depends on this machine's speed: the workload is only asked to run (positive
times, a list of cores); what the readings say is tested with readings given by hand."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, event_loop_runner, run_benchmark
from inferlab.bench.canary import CanaryLog, Taken, canary_block, canary_endpoint, drift_warning
from inferlab.bench.client import Endpoint
from inferlab.bench.machine_canary import (
    WORKLOAD,
    cores_for,
    is_loopback,
    listener_pid,
    machine_probe,
    run_pinned,
    take_machine,
)
from inferlab.bench.runner import LevelRun
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.metrics.runfolder import read_summary
from inferlab.summary import Canary, MachineReading

LINUX_PINS = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="thread affinity is Linux's"
)


@pytest.fixture
def listening() -> Iterator[int]:
    """A TCP socket of this process listening on a free loopback port: its port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _own_cores() -> tuple[int, ...]:
    import psutil

    return tuple(sorted(psutil.Process().cpu_affinity() or ()))


def test_the_workload_runs_and_times_both_parts() -> None:
    probe = machine_probe("http://10.255.0.1:8080/v1")  # never connected to: only its host
    r = take_machine(probe)
    assert r.matmul_ms > 0 and r.read_ms > 0 and r.machine_ms == r.matmul_ms + r.read_ms
    assert r.cores and all(isinstance(c, int) for c in r.cores)
    assert r.cores_from == "this process's cores: the server (10.255.0.1) is not on this machine"
    assert WORKLOAD == "8 rounds of 400 x a 64x64 float32 matmul and a 64 MiB float32 sum"


def test_the_server_is_found_by_its_port(listening: int) -> None:
    assert listener_pid(listening) == os.getpid()
    probe = machine_probe(f"http://127.0.0.1:{listening}/v1")
    assert (probe.pid, probe.port) == (os.getpid(), listening)
    cores, how = cores_for(probe)
    assert cores == _own_cores()
    assert how.startswith(f"the server's: pid {os.getpid()} (") and f"port {listening}" in how


def test_an_injected_pid_and_a_port_nobody_listens_on(listening: int) -> None:
    injected = machine_probe("http://127.0.0.1:9/v1", pid=os.getpid())
    assert injected.pid == os.getpid() and cores_for(injected)[0] == _own_cores()
    with socket.socket() as s:  # a port freed just now: nothing listens on it
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    probe = machine_probe(f"http://localhost:{free}/v1")
    assert probe.pid is None
    assert cores_for(probe) == (
        _own_cores(),
        f"this process's cores: no process found listening on port {free}",
    )


def test_loopback_hosts() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.3.2.1", "::1", "localhost", "0.0.0.0"))
    assert not any(is_loopback(h) for h in ("10.0.0.2", "example.com", None))


@LINUX_PINS
def test_the_pin_is_the_workload_threads_alone() -> None:
    before = os.sched_getaffinity(0)
    one = (min(before),)
    matmul_ms, read_ms, unpinned = run_pinned(machine_probe("http://h:1/v1").arrays, one, 1)
    assert matmul_ms > 0 and read_ms > 0 and unpinned is None
    assert os.sched_getaffinity(0) == before  # this thread kept its cores


@pytest.mark.slow
@LINUX_PINS
def test_a_server_pinned_to_one_core_lends_it_to_the_workload() -> None:
    core = max(os.sched_getaffinity(0))
    code = (
        "import os, socket\n"
        f"os.sched_setaffinity(0, {{{core}}})\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "print(s.getsockname()[1], flush=True); input()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        r = take_machine(machine_probe(f"http://127.0.0.1:{port}/v1"))
        assert r.cores == (core,)
        assert r.cores_from.startswith(f"the server's: pid {proc.pid} (")
        # a client pinned to another core (bench beside a server on its own core) still
        # reads the server's: the workload's thread may take any core of the cpuset
        others = sorted(os.sched_getaffinity(0) - {core})
        if others:
            client = (
                "import os, sys\n"
                f"os.sched_setaffinity(0, {{{others[0]}}})\n"
                "from inferlab.bench.machine_canary import machine_probe, take_machine\n"
                f"r = take_machine(machine_probe('http://127.0.0.1:{port}/v1'))\n"
                "print(r.cores, r.cores_from)\n"
            )
            said = subprocess.run(
                [sys.executable, "-c", client], capture_output=True, text=True, check=True
            ).stdout
            assert said.startswith(f"({core},) the server's"), said
    finally:
        proc.kill()
        proc.wait()


def _reading(machine_ms: float) -> MachineReading:
    return MachineReading(machine_ms / 2, machine_ms / 2, (0,), "the server's: pid 1 (x)")


def _log(server_ms: list[float], machine_ms: list[float]) -> CanaryLog:
    """Three readings at rest, then one after each of the runs, as given."""
    log = CanaryLog(canary_endpoint(Endpoint("http://h/v1", "m", server_kind="vllm")))
    log.machine = machine_probe("http://10.255.0.1/v1")
    for i, (s, m) in enumerate(zip(server_ms, machine_ms, strict=True)):
        log.taken.append(Taken(float(i), s, max(-1, i - 3), None, _reading(m)))
    return log


def _runs(n: int) -> list[LevelRun]:
    return [LevelRun(Level("concurrency", float(c + 1))) for c in range(n)]


def test_a_drift_warning_says_whether_the_machine_or_the_server_moved() -> None:
    runs = _runs(2)
    # c=1: both canaries +50 % (a busy loop on the server's core): the machine
    log = _log([40.0, 40.4, 40.2, 60.0, 40.0], [5.0, 5.1, 5.0, 7.5, 5.0])
    w = drift_warning(log, [runs[0]], runs)
    assert w is not None and w.code == "machine_drift"
    assert "Which moved: the machine was slower (machine canary +50 %, noise 5 %; " in w.message
    assert ". The machine canary ran on the server's: pid 1 (x)" in w.message
    # c=2: the server canary +50 %, the machine canary held: the server
    log = _log([40.0, 40.4, 40.2, 40.1, 60.0], [5.0, 5.1, 5.0, 5.0, 5.05])
    w = drift_warning(log, [runs[1]], runs)
    assert w is not None and "Which moved: the server was slower, the machine not" in w.message
    # no server drift: no warning, whatever the machine canary did
    assert drift_warning(_log([40.0] * 5, [5.0, 5.0, 5.0, 9.0, 9.0]), [runs[0]], runs) is None


def test_the_summary_keeps_a_machine_reading_beside_each_canary_reading() -> None:
    runs = _runs(2)
    block = canary_block(_log([40.0, 40.4, 40.2, 60.0, 61.0], [5.0, 5.1, 5.0, 7.5, 7.6]), runs)
    machine = Canary.from_json(block.to_json()).machine  # as summary.json reads back
    assert machine is not None and machine.workload == WORKLOAD
    assert len(machine.readings) == len(block.readings) == 5
    assert [r.machine_ms for r in machine.readings if r] == [5.0, 5.1, 5.0, 7.5, 7.6]
    assert machine.rest_machine_ms == 5.0 and machine.rest_spread == pytest.approx(0.02)
    assert machine.verdict is not None and machine.verdict.says == "machine"
    # the machine canary rose with the server canary: it explains most of its variance
    assert machine.server_variance_explained == pytest.approx(0.99, abs=0.01)
    plain = canary_block(dataclasses.replace(_log([40.0] * 3, [5.0] * 3), machine=None), [])
    assert plain.machine is None and plain.machine is None


@pytest.mark.slow
def test_bench_takes_a_machine_reading_on_the_servers_cores(tmp_path: Path) -> None:
    from inferlab.testing.fake_server import running_fake_server

    load = Workload.fixed(prompt_tokens=8, output_tokens=4, levels=[Level("concurrency", 1)],
                          requests_per_level=2, warmup=0)  # fmt: skip
    with running_fake_server(ttft=0.01, tpot=0.005) as url:
        cfg = BenchConfig(url=url, model=None, load=load, out_dir=tmp_path, scrape=False)
        event_loop_runner()(run_benchmark(cfg))
    summary = read_summary(tmp_path / "summary.json")
    machine = summary.canary.machine
    assert summary.canary is not None and machine is not None
    assert len(machine.readings) == len(summary.canary.readings) == 4  # 3 at rest, 1 after
    for r in machine.readings:
        assert r is not None and r.matmul_ms > 0 and r.read_ms > 0 and r.cores
        assert r.cores_from.startswith("the server's: pid ")  # found by its port
    assert machine.verdict is not None
