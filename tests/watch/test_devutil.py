"""GPU util through NVML (a stand-in module here: no GPU) and a local server's CPU use."""

from __future__ import annotations

import os
import socket
from types import SimpleNamespace

import pytest

from inferlab.watch.devutil import NvmlUtil, probe_for


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


def test_local_listener_cpu_use_or_a_reason() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        q, kind = probe_for(f"http://127.0.0.1:{port}/v1")()
        if kind == "gpu":
            pytest.skip("NVML present: GPU util is shown instead")
        assert kind == "cpu" and q.value is not None and 0 <= q.value <= 1
        assert f"pid {os.getpid()}" in q.basis
    q, kind = probe_for("http://10.255.255.1:8000")()
    assert q.value is None and "not on this machine" in q.basis
