"""GPU util through NVML (a stand-in module here: no GPU) and a local server's CPU use."""

from __future__ import annotations

import os
import socket
from types import SimpleNamespace

import pytest

from inferlab.watch.devutil import MIN_WINDOW_S, NvmlUtil, ProcessCpu, probe_for
from tests.watch.helpers import FakeClock


class FakeNvml:
    def nvmlDeviceGetCount(self) -> int:  # noqa: N802 (NVML's names)
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:  # noqa: N802
        return i

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:  # noqa: N802
        return SimpleNamespace(gpu=[100, 60][h], memory=10)


def test_nvml_mean_over_gpus() -> None:
    q, kind = NvmlUtil(FakeNvml())()
    assert kind == "gpu" and q.value == pytest.approx(0.8) and "2 GPU" in q.basis


class FakeProc:
    """A process whose CPU seconds the test sets."""

    pid = 4242

    def __init__(self) -> None:
        self.cpu_s = 10.0

    def cpu_times(self) -> SimpleNamespace:
        return SimpleNamespace(user=self.cpu_s * 0.75, system=self.cpu_s * 0.25)

    def name(self) -> str:
        return "llama-server"


def test_cpu_use_is_cpu_seconds_over_the_window_over_the_cores() -> None:
    proc, clock = FakeProc(), FakeClock()
    probe = ProcessCpu(proc, 8080, cores=2, clock=clock.monotonic)  # type: ignore[arg-type]
    clock.t += 2.0
    proc.cpu_s += 3.0  # 1.5 cores busy for 2 s
    q, kind = probe()
    assert kind == "cpu" and q.value == pytest.approx(0.75)
    assert "150 % of one core over 2.0 s, of 2 cores" in q.basis and "pid 4242" in q.basis


def test_a_reading_sooner_than_the_tick_resolution_is_unknown_and_keeps_its_window() -> None:
    # the CI failure this guards: a reading 0.1 ms after the first, one 10 ms tick
    # apart in CPU time, claimed 171 cores of a 2-core machine
    proc, clock = FakeProc(), FakeClock()
    probe = ProcessCpu(proc, 8080, cores=2, clock=clock.monotonic)  # type: ignore[arg-type]
    clock.t += 0.0001
    proc.cpu_s += 0.01
    q, _ = probe()
    assert q.value is None and "measuring" in q.basis and "pid 4242" in q.basis
    clock.t += MIN_WINDOW_S  # the next reading spans both
    q, _ = probe()
    assert q.value == pytest.approx(0.01 / (MIN_WINDOW_S + 0.0001) / 2)


def test_ticks_at_both_ends_never_claim_more_than_every_core() -> None:
    proc, clock = FakeProc(), FakeClock()
    probe = ProcessCpu(proc, 8080, cores=2, clock=clock.monotonic)  # type: ignore[arg-type]
    clock.t += MIN_WINDOW_S
    proc.cpu_s += 2 * MIN_WINDOW_S + 0.02  # two cores flat out, plus two ticks
    q, _ = probe()
    assert q.value == 1.0 and "204 % of one core" in q.basis  # the raw count stays visible


def test_a_local_listener_is_read_through_psutil() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        probe = probe_for(f"http://127.0.0.1:{port}/v1")
        if isinstance(probe, NvmlUtil):
            pytest.skip("NVML present: GPU util is shown instead")
        assert isinstance(probe, ProcessCpu) and probe.proc.pid == os.getpid()
        clock = FakeClock()
        probe.clock = clock.monotonic
        probe.since_s = clock.t
        clock.t += 1000.0  # this test process's real CPU seconds over a long window
        q, kind = probe()
        assert kind == "cpu" and q.value is not None and 0 <= q.value <= 1
        assert f"pid {os.getpid()}" in q.basis
    q, kind = probe_for("http://10.255.255.1:8000")()
    assert q.value is None and "not on this machine" in q.basis
