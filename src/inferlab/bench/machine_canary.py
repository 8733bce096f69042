"""The machine canary: a fixed CPU and memory workload run beside each drift-canary request,
on the cores the server runs on, so that a slower machine and a slower server read apart.

The drift canary (bench/canary.py) is a request to the server: its TPOT moves when the
machine does and when the server does. This workload moves with the machine only. Each
reading is ROUNDS rounds, back to back, of a matmul (MATMUL_REPEATS products of two fixed
MATMUL_SIZE x MATMUL_SIZE float32 matrices, ~2.3 ms on a 2-core EPYC VM) and a memory read
(the sum of a READ_BYTES float32 array, past the L3 of most machines, ~2.6 ms); it keeps
the mean time of one round's matmul (`matmul_ms`) and read (`read_ms`).

Where the server is local (a loopback URL), the process listening on its port is found
once (psutil) and each reading re-reads its CPU affinity and pins the workload to it, in a
thread of its own that ends with the reading (on Linux the pin is that thread's alone).
Where the server is remote, not found, or its cores are not ours to use (the pin fails:
outside this machine's cpuset), the workload runs on this process's cores and the reading
says so (`cores_from`). A client pinned apart from the server (its own core, the usual
way to keep the two from competing) still reads the server's: a thread may be pinned to
any core of the cpuset, whatever its process's own mask.

Held for the run: the two small matrices and the READ_BYTES array (64 MiB).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from inferlab.summary import MachineReading

if TYPE_CHECKING:
    import psutil

# OpenBLAS computes a product of at most 64^3 multiply-adds on the calling thread; a larger
# one goes to its own worker threads, which the pin does not reach (128 x 128 here: one
# reading in ten waited 278 ms on a busy core).
MATMUL_SIZE = 64
MATMUL_REPEATS = 400
READ_BYTES = 64 * 2**20
# A thread that wakes gets a few ms of credit from the scheduler before it shares its core
# (CFS/EEVDF): one 5 ms round read a core that a duty-cycled busy loop took a third of as
# free (median +0 %); 8 rounds back to back (~40 ms) read it +46 % (matmul), +51 % (read).
ROUNDS = 8
SEED = 47
WORKLOAD = (
    f"{ROUNDS} rounds of {MATMUL_REPEATS} x a {MATMUL_SIZE}x{MATMUL_SIZE} float32 matmul "
    f"and a {READ_BYTES // 2**20} MiB float32 sum"
)
_LOOPBACK_NAMES = {"localhost", "0.0.0.0", "::"}


@dataclass(frozen=True, slots=True)
class MachineProbe:
    """What a run's machine-canary readings need: the fixed arrays, and the server's process
    (None: remote or not found, `why` says which)."""

    arrays: tuple[Any, Any, Any]  # numpy: the two matrices, the array read
    pid: int | None
    port: int | None
    why: str  # where pid is None: why the workload runs on this process's cores


def is_loopback(host: str | None) -> bool:
    """A host name or address on this machine's loopback (or every local address)."""
    if host is None:
        return False
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listener_pid(port: int) -> int | None:
    """The pid of the process listening on a local TCP port; None where none is visible
    (none listens, or it is another user's and hidden)."""
    import psutil

    for _ in range(3):  # listing every socket races with processes coming and going: retry
        with contextlib.suppress(psutil.Error, OSError):
            for c in psutil.net_connections(kind="tcp"):
                if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                    return int(c.pid)
            return None
    return None


def _arrays() -> tuple[Any, Any, Any]:
    import numpy as np

    rng = np.random.default_rng(SEED)
    shape = (MATMUL_SIZE, MATMUL_SIZE)
    a = rng.standard_normal(shape, dtype=np.float32)
    b = rng.standard_normal(shape, dtype=np.float32)
    big = np.ones(READ_BYTES // 4, dtype=np.float32)  # written now: no page faults when read
    return a, b, big


def machine_probe(
    base_url: str, pid: int | None = None, arrays: tuple[Any, Any, Any] | None = None
) -> MachineProbe:
    """The probe for a server at `base_url`; `pid` given: that process's cores (tests);
    `arrays`: another probe's, shared (a paired run's endpoints)."""
    u = urlparse(base_url)
    port = u.port or (443 if u.scheme == "https" else 80)
    why = ""
    if pid is None and not is_loopback(u.hostname):
        why = f"the server ({u.hostname}) is not on this machine"
    elif pid is None and (pid := listener_pid(port)) is None:
        why = f"no process found listening on port {port}"
    probe = MachineProbe(arrays or _arrays(), pid, port, why)
    _rounds(probe.arrays, 1)  # warm-up, not kept: the first product pays the library's setup
    return probe


def _process_cores() -> tuple[int, ...]:
    import psutil

    with contextlib.suppress(AttributeError, psutil.Error):  # no cpu_affinity on macOS
        return tuple(sorted(psutil.Process().cpu_affinity() or ()))
    return ()


def cores_for(probe: MachineProbe) -> tuple[tuple[int, ...], str]:
    """The cores to pin the workload to now, and how they were found: the server's current
    affinity, else this process's and why."""
    import psutil

    own = "this process's cores: "
    if probe.pid is None:
        return _process_cores(), own + probe.why
    try:
        proc: psutil.Process = psutil.Process(probe.pid)
        cores, name = tuple(sorted(proc.cpu_affinity() or ())), proc.name()
    except (AttributeError, psutil.Error) as e:
        return _process_cores(), own + f"the server's pid {probe.pid} unreadable ({e!r})"
    return cores, f"the server's: pid {probe.pid} ({name}) on port {probe.port}, its affinity"


def _rounds(arrays: tuple[Any, Any, Any], rounds: int) -> tuple[float, float]:
    """The mean ms of one round's matmul and of its read, over `rounds` back to back."""
    import numpy as np

    a, b, big = arrays
    matmul_ns = read_ns = 0
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(MATMUL_REPEATS):
            np.matmul(a, b)
        t1 = time.perf_counter_ns()
        big.sum()
        t2 = time.perf_counter_ns()
        matmul_ns, read_ns = matmul_ns + t1 - t0, read_ns + t2 - t1
    return matmul_ns / rounds * 1e-6, read_ns / rounds * 1e-6


def run_pinned(
    arrays: tuple[Any, Any, Any], cores: tuple[int, ...], rounds: int = ROUNDS
) -> tuple[float, float, str | None]:
    """The workload in a thread of its own pinned to `cores` (it ends with it, so the pin
    leaves nothing behind): (matmul_ms, read_ms, why it was not pinned or None)."""
    out: dict[str, Any] = {}

    def work() -> None:
        try:
            if cores and hasattr(os, "sched_setaffinity"):
                os.sched_setaffinity(0, cores)  # 0: this thread alone, on Linux
            elif cores:
                out["unpinned"] = "not pinned: no sched_setaffinity on this platform"
        except OSError as e:
            out["unpinned"] = f"not pinned ({e.strerror})"
        out["ms"] = _rounds(arrays, rounds)

    t = threading.Thread(target=work, name="machine-canary", daemon=True)
    t.start()
    t.join()
    matmul_ms, read_ms = out["ms"]
    return matmul_ms, read_ms, out.get("unpinned")


def take_machine(probe: MachineProbe) -> MachineReading:
    """One reading on the server's cores now (blocks ~40 ms: call it from a thread)."""
    cores, cores_from = cores_for(probe)
    matmul_ms, read_ms, unpinned = run_pinned(probe.arrays, cores)
    if unpinned is not None:
        cores, cores_from = _process_cores(), f"{cores_from}; {unpinned}"
    return MachineReading(matmul_ms, read_ms, cores, cores_from)
