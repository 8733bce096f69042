"""Peak matmul FLOPS on the CPU through numpy's BLAS (all its threads), float32 and float64."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class FlopsResult:
    fp32_flops_per_s: float
    fp64_flops_per_s: float
    n: int
    repeats: int
    blas: str


def _blas_name() -> str:
    try:
        from threadpoolctl import threadpool_info

        libs = [f"{i.get('internal_api')} {i.get('version')}" for i in threadpool_info()]
        return ", ".join(libs) or "unknown"
    except ImportError:
        return "numpy BLAS"


def measure_flops(n: int = 2048, repeats: int = 5) -> FlopsResult:
    rng = np.random.default_rng(0)  # random data: zeros can run faster than real data
    out: dict[str, float] = {}
    for dtype in (np.float32, np.float64):
        a: np.ndarray = rng.standard_normal((n, n)).astype(dtype)
        b: np.ndarray = rng.standard_normal((n, n)).astype(dtype)
        np.matmul(a, b)  # warm-up
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            np.matmul(a, b)
            times.append(time.perf_counter() - t)
        out[np.dtype(dtype).name] = 2 * n**3 / min(times)  # best of N, as for bandwidth
    return FlopsResult(out["float32"], out["float64"], n, repeats, _blas_name())
