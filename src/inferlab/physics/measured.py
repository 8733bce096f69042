"""Measured against the floor: achieved bandwidth, MBU, MFU, and claims that cannot be true."""

from __future__ import annotations

from dataclasses import dataclass

IMPOSSIBLE_CAUSES = (
    "the clock stopped before the device finished (no synchronize before reading the timer: "
    "kernels run asynchronously)",
    "prompt tokens counted as output tokens",
    "tokens counted per batch but reported per user, or a cached/repeated response",
)


@dataclass(frozen=True, slots=True)
class Utilisation:
    measured_step_time_s: float
    bytes_per_step: float
    flops_per_step: float
    achieved_bandwidth_bytes_per_s: float
    achieved_flops_per_s: float
    mbu: float  # achieved bandwidth / peak bandwidth
    mfu: float  # achieved FLOPS / peak FLOPS
    floor_step_time_s: float
    floor_over_measured: float


def utilisation(
    bytes_per_step: float,
    flops_per_step: float,
    measured_step_time_s: float,
    bandwidth_bytes_per_s: float,
    peak_flops_per_s: float,
    floor_step_time_s: float,
) -> Utilisation:
    bw = bytes_per_step / measured_step_time_s
    fl = flops_per_step / measured_step_time_s
    return Utilisation(
        measured_step_time_s=measured_step_time_s,
        bytes_per_step=bytes_per_step,
        flops_per_step=flops_per_step,
        achieved_bandwidth_bytes_per_s=bw,
        achieved_flops_per_s=fl,
        mbu=bw / bandwidth_bytes_per_s,
        mfu=fl / peak_flops_per_s,
        floor_step_time_s=floor_step_time_s,
        floor_over_measured=floor_step_time_s / measured_step_time_s,
    )


@dataclass(frozen=True, slots=True)
class ClaimCheck:
    claimed_tokens_per_s: float
    ceiling_tokens_per_s: float
    possible: bool
    causes: tuple[str, ...]


def check_claim(claimed_tokens_per_s: float, ceiling_tokens_per_s: float) -> ClaimCheck:
    """A per-user rate above the physical ceiling is impossible; name the usual causes."""
    possible = claimed_tokens_per_s <= ceiling_tokens_per_s * 1.001
    return ClaimCheck(
        claimed_tokens_per_s,
        ceiling_tokens_per_s,
        possible,
        () if possible else IMPOSSIBLE_CAUSES,
    )
