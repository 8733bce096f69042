"""GPU ceilings through torch or cupy, when one is installed and sees a device (optional).

Timed with device events, so the clock stops only when the work is done: a
host timer without synchronisation measures the launch, not the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class GpuResult:
    name: str
    memory_bytes: float
    copy_bytes_per_s: float  # device-to-device copy, read + write counted
    read_bytes_per_s: float  # a reduction: reads only
    bf16_flops_per_s: float
    library: str


def _torch_probe(torch: Any, repeats: int = 10) -> GpuResult:
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    n = 1 << 30  # 1 GiB of bytes per buffer
    a = torch.randn(n // 4, device=dev)
    b = torch.empty_like(a)

    def timed(fn: Any) -> float:
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


def probe_gpu() -> GpuResult | None:
    """None when no GPU library or device is present (the common case here)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    return _torch_probe(torch)
