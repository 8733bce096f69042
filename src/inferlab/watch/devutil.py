"""The figure the deck says misleads: GPU utilisation (NVML), or a CPU server's process CPU use.

GPU util counts the time any kernel runs, not how much of the memory system or
the ALUs it uses; it is shown beside MBU/MFU so the contrast is visible.
nvidia-ml-py is optional and imported only here; without a GPU, a server on
this machine is found by its listening port and its CPU use read with psutil.
"""

from __future__ import annotations

import contextlib
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


class ProcessCpu:
    """CPU use of the process listening on the server's port, as a fraction of all cores."""

    def __init__(self, proc: psutil.Process, port: int, cores: int) -> None:
        self.proc = proc
        self.port = port
        self.cores = cores
        proc.cpu_percent(None)  # the first call only starts the clock

    def __call__(self) -> tuple[Quantity, str]:
        import psutil

        try:
            pct = self.proc.cpu_percent(None)
        except psutil.Error:
            # restarted? the new process listens on the same port: follow it
            found = _listener(self.port)
            if found is not None:
                self.proc = found
                found.cpu_percent(None)
            return unknown("the server process is gone (looking for its successor)"), "cpu"
        basis = f"pid {self.proc.pid} ({self.proc.name()}): {pct:.0f} % of one core"
        return Quantity(pct / 100.0 / self.cores, basis + f", over {self.cores} cores"), "cpu"


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
