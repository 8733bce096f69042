"""The roofline: time >= max(FLOPs / peak FLOPS, bytes / bandwidth), plus fixed overhead."""

from __future__ import annotations

from dataclasses import dataclass

from inferlab.vocab import Bound


@dataclass(frozen=True, slots=True)
class StepTime:
    bytes: float
    flops: float
    memory_time_s: float  # bytes / bandwidth
    compute_time_s: float  # FLOPs / peak FLOPS
    overhead_s: float  # fixed per-step cost: kernel launches, scheduling
    step_time_s: float
    bound: Bound

    @property
    def intensity_flops_per_byte(self) -> float:
        return self.flops / self.bytes if self.bytes else float("inf")

    @property
    def overhead_share(self) -> float:
        return self.overhead_s / self.step_time_s if self.step_time_s else 0.0


def roofline(
    bytes_moved: float,
    flops: float,
    bandwidth_bytes_per_s: float,
    peak_flops_per_s: float,
    overhead_s: float = 0.0,
) -> StepTime:
    mem = bytes_moved / bandwidth_bytes_per_s
    comp = flops / peak_flops_per_s
    return StepTime(
        bytes=bytes_moved,
        flops=flops,
        memory_time_s=mem,
        compute_time_s=comp,
        overhead_s=overhead_s,
        step_time_s=max(mem, comp) + overhead_s,
        bound="memory" if mem >= comp else "compute",
    )


def ridge_point(peak_flops_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """FLOP per byte where the two limits meet: below it work is memory-bound."""
    return peak_flops_per_s / bandwidth_bytes_per_s


def launch_overhead_s(kernels: int, launch_time_s: float) -> float:
    """CPU time to launch one step's kernels (what CUDA graphs replace by one launch)."""
    return kernels * launch_time_s
