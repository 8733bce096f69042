"""GPU ceilings through torch or cupy, when one is installed and sees a device (optional).

Neither is a dependency (uv would pull a multi-GB CUDA build); install one beside
inferlab on a GPU machine and `inferlab probe` uses it.

Timed with device events, so the clock stops only when the work is done: a
host timer without synchronisation measures the launch, not the kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True, slots=True)
class GpuResult:
    name: str
    memory_bytes: float
    copy_bytes_per_s: float  # device-to-device copy, read + write counted
    read_bytes_per_s: float  # a reduction: reads only
    bf16_flops_per_s: float
    library: str


def _torch_probe(torch: ModuleType, repeats: int = 10) -> GpuResult:
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    n = 1 << 30  # 1 GiB of bytes per buffer
    a = torch.randn(n // 4, device=dev)
    b = torch.empty_like(a)

    def timed(fn: Callable[[], object]) -> float:
        fn()  # warm-up
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            fn()
        end.record()
        torch.cuda.synchronize()
        return float(start.elapsed_time(end)) / 1e3 / repeats

    t_copy = timed(lambda: b.copy_(a))
    t_read = timed(lambda: a.sum())
    m = 8192
    x = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    y = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    t_mm = timed(lambda: x @ y)
    return GpuResult(
        name=props.name,
        memory_bytes=float(props.total_memory),
        copy_bytes_per_s=2 * n / t_copy,
        read_bytes_per_s=n / t_read,
        bf16_flops_per_s=2 * m**3 / t_mm,
        library=f"torch {torch.__version__}",
    )


def _cupy_probe(cp: ModuleType, repeats: int = 10) -> GpuResult:
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    n = 1 << 30
    a = cp.random.standard_normal(n // 4, dtype=cp.float32)
    b = cp.empty_like(a)

    def timed(fn: Callable[[], object]) -> float:
        fn()  # warm-up
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(repeats):
            fn()
        end.record()
        end.synchronize()
        return float(cp.cuda.get_elapsed_time(start, end)) / 1e3 / repeats

    t_copy = timed(lambda: cp.copyto(b, a))
    t_read = timed(lambda: a.sum())
    m = 8192
    # cupy has no bf16: fp16 matmul runs on the same tensor cores at the same dense rate.
    x = cp.random.standard_normal((m, m), dtype=cp.float32).astype(cp.float16)
    y = cp.random.standard_normal((m, m), dtype=cp.float32).astype(cp.float16)
    t_mm = timed(lambda: x @ y)
    name = props["name"]
    return GpuResult(
        name=name.decode() if isinstance(name, bytes) else str(name),
        memory_bytes=float(props["totalGlobalMem"]),
        copy_bytes_per_s=2 * n / t_copy,
        read_bytes_per_s=n / t_read,
        bf16_flops_per_s=2 * m**3 / t_mm,
        library=f"cupy {cp.__version__} (fp16 matmul)",
    )


def probe_gpu() -> GpuResult | None:
    """torch if it sees a GPU, else cupy; None when neither does (the common case here)."""
    try:
        import torch

        if torch.cuda.is_available():
            return _torch_probe(torch)
    except ImportError:
        pass
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return _cupy_probe(cupy)
    except Exception:  # cupy raises its own CUDA errors when no driver or device is present
        return None
    return None
