"""The figure the deck says misleads: GPU utilisation (NVML), or a CPU server's process CPU use.

GPU util counts the time any kernel runs, not how much of the memory system or
the ALUs it uses; it is shown beside MBU/MFU so the contrast is visible.
nvidia-ml-py is optional and imported only here; without a GPU, a server on
this machine is found by its listening port and its CPU use read with psutil.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlparse

from inferlab.watch.derive import Quantity, unknown

if TYPE_CHECKING:
    import psutil

    from inferlab.watch.frame import UtilProbe

_LOCAL = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


class _Rates(Protocol):
    gpu: int  # percent of the time a kernel ran


class _Nvml(Protocol):
    """The part of pynvml read here."""

    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> object: ...
    def nvmlDeviceGetUtilizationRates(self, handle: object) -> _Rates: ...


class NvmlUtil:
    """Utilisation of GPU 0 (or the mean over all) via NVML."""

    def __init__(self, nvml: _Nvml) -> None:
        self.nvml = nvml
        n = nvml.nvmlDeviceGetCount()
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]

    def __call__(self) -> tuple[Quantity, str]:
        vals = [self.nvml.nvmlDeviceGetUtilizationRates(h).gpu for h in self.handles]
        mean = sum(vals) / len(vals) / 100.0
        return Quantity(mean, f"NVML utilization.gpu, mean of {len(vals)} GPU(s)"), "gpu"


MIN_WINDOW_S = 0.5
"""The shortest window a CPU reading spans. The kernel counts a process's CPU time
in ticks (10 ms at 100 Hz), so a reading over a few milliseconds can claim a hundred
cores; over 0.5 s the two ends' ticks are at most 4 % of one core."""


class ProcessCpu:
    """CPU use of the process listening on the server's port, as a fraction of all cores.

    Each reading spans the time since the last one; one sooner than MIN_WINDOW_S
    is unknown and keeps the window open, so the next reading covers both.
    """

    def __init__(
        self,
        proc: psutil.Process,
        port: int,
        cores: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.port, self.cores, self.clock = port, cores, clock
        self._start(proc)

    def _start(self, proc: psutil.Process) -> None:
        self.proc = proc
        self.since_s, self.cpu_s = self.clock(), _cpu_s(proc)

    def __call__(self) -> tuple[Quantity, str]:
        import psutil

        try:
            now_s, cpu_s, name = self.clock(), _cpu_s(self.proc), self.proc.name()
        except psutil.Error:
            # restarted? the new process listens on the same port: follow it
            found = _listener(self.port)
            if found is not None:
                with contextlib.suppress(psutil.Error):
                    self._start(found)
            return unknown("the server process is gone (looking for its successor)"), "cpu"
        span_s = now_s - self.since_s
        if span_s < MIN_WINDOW_S:
            return unknown(f"pid {self.proc.pid}: measuring, {span_s * 1e3:.0f} ms so far"), "cpu"
        cores_busy = max(0.0, cpu_s - self.cpu_s) / span_s
        self.since_s, self.cpu_s = now_s, cpu_s
        # ticks at both ends can add a few % of a core past the whole machine
        share = min(1.0, cores_busy / self.cores)
        basis = f"pid {self.proc.pid} ({name}): {cores_busy * 100:.0f} % of one core"
        return Quantity(share, basis + f" over {span_s:.1f} s, of {self.cores} cores"), "cpu"


def _cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system)


def _nvml() -> NvmlUtil | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        util = NvmlUtil(pynvml)
    except Exception:  # no driver, no device: NVML raises its own error types
        return None
    return util if util.handles else None


def _listener(port: int) -> psutil.Process | None:
    import psutil

    for _ in range(3):  # listing every socket races with processes coming and going: retry
        with contextlib.suppress(psutil.Error, OSError):
            for c in psutil.net_connections(kind="tcp"):
                if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                    return psutil.Process(c.pid)
            return None
    return None


def _none(reason: str) -> UtilProbe:
    q = unknown(reason)
    return lambda: (q, "none")


def probe_for(url: str) -> UtilProbe:
    """A callable returning (utilisation, kind): NVML if present, else the local server's CPU."""
    nv = _nvml()
    if nv is not None:
        return nv
    u = urlparse(url)
    if u.hostname not in _LOCAL:
        return _none("no NVML here and the server is not on this machine")
    port = u.port or (443 if u.scheme == "https" else 80)
    proc = _listener(port)
    if proc is None:
        return _none(f"no NVML here and no local process found listening on port {port}")
    import psutil

    return ProcessCpu(proc, port, psutil.cpu_count() or 1)
