"""STREAM-style memory bandwidth on the CPU, all cores, arrays far larger than the last-level cache.

Kernels (numpy releases the GIL in them, so one thread per core runs in parallel):
  read   s += sum(a)       bytes counted: |a|             (what a decode step does)
  copy   b[:] = a          bytes counted: |a| read + |b| written
  triad  a[:] = b + k * c  bytes counted: |b| + |c| read + |a| written
Write-allocate traffic (reading a line before writing it) is not counted, as in
STREAM. Two warm-up passes are excluded; as in STREAM, each figure is the best
of the repeats (on a shared machine interference only ever slows a run down),
and the median is kept beside it.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class BandwidthResult:
    read_bytes_per_s: float
    copy_bytes_per_s: float
    triad_bytes_per_s: float
    array_bytes: int
    threads: int
    repeats: int
    runs_read_bytes_per_s: tuple[float, ...]
    median_read_bytes_per_s: float


def _timed(pool: ThreadPoolExecutor, fn: Callable[[int], object], threads: int) -> float:
    t = time.perf_counter()
    list(pool.map(fn, range(threads)))
    return time.perf_counter() - t


def measure_bandwidth(
    array_bytes: int = 1 << 30, repeats: int = 10, threads: int | None = None
) -> BandwidthResult:
    threads = threads or os.cpu_count() or 1
    n = array_bytes // 8
    n -= n % threads
    a = np.ones(n, dtype=np.float64)  # touched: pages are really allocated
    b = np.ones(n, dtype=np.float64)
    c = np.ones(n, dtype=np.float64)
    step = n // threads
    sl = [slice(i * step, (i + 1) * step) for i in range(threads)]

    def read(i: int) -> object:
        return float(np.add.reduce(a[sl[i]]))

    def copy(i: int) -> object:
        np.copyto(b[sl[i]], a[sl[i]])
        return None

    def triad(i: int) -> object:
        np.multiply(c[sl[i]], 3.0, out=a[sl[i]])
        np.add(a[sl[i]], b[sl[i]], out=a[sl[i]])
        return None

    size = n * 8
    with ThreadPoolExecutor(threads) as pool:
        runs: dict[str, list[float]] = {"read": [], "copy": [], "triad": []}
        for rep in range(repeats + 2):
            tr = _timed(pool, read, threads)
            tc = _timed(pool, copy, threads)
            tt = _timed(pool, triad, threads)
            if rep < 2:
                continue  # warm-up: page faults, frequency ramp
            runs["read"].append(size / tr)
            runs["copy"].append(2 * size / tc)
            # numpy's triad makes two passes: c -> a (read c, write a), then a + b -> a
            # (read a and b, write a): 5 array-passes of traffic in all.
            runs["triad"].append(5 * size / tt)
    return BandwidthResult(
        read_bytes_per_s=max(runs["read"]),
        copy_bytes_per_s=max(runs["copy"]),
        triad_bytes_per_s=max(runs["triad"]),
        array_bytes=size,
        threads=threads,
        repeats=repeats,
        runs_read_bytes_per_s=tuple(runs["read"]),
        median_read_bytes_per_s=statistics.median(runs["read"]),
    )
