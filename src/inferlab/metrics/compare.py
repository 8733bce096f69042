"""Measured against the floor, per level: bytes per step, achieved bandwidth, MBU, MFU."""

from __future__ import annotations

import dataclasses

from inferlab.physics.decode import decode_point
from inferlab.physics.measured import utilisation
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec
from inferlab.summary import FloorComparison, LevelSummary


def compare_at(
    cost: ModelCost, hw: HardwareSpec, batch: int, context: int, step_s: float | None
) -> FloorComparison:
    """The floor at (batch, context), and the measured step time against it when known."""
    p = decode_point(cost, hw, batch, context)
    d = FloorComparison(
        floor_batch=batch,
        floor_context_tokens=context,
        bytes_per_step=p.bytes_per_step,
        flops_per_step=p.flops_per_step,
        predicted_step_time_s=p.step_time_s,
        predicted_bound=p.step.bound,
        ceiling_tokens_per_s_per_user=p.tokens_per_s_per_user,
        predicted_tokens_per_s_total=p.tokens_per_s_total,
    )
    if not step_s:
        return d
    u = utilisation(
        p.bytes_per_step,
        p.flops_per_step,
        step_s,
        hw.bandwidth_bytes_per_s,
        hw.peak_flops(cost.compute_dtype),
        p.step_time_s,
    )
    return dataclasses.replace(
        d,
        measured_step_time_s=step_s,
        achieved_bandwidth_bytes_per_s=u.achieved_bandwidth_bytes_per_s,
        achieved_flops_per_s=u.achieved_flops_per_s,
        mbu=u.mbu,
        mfu=u.mfu,
        measured_over_floor=step_s / p.step_time_s,
    )


def compare_level(
    s: LevelSummary, cost: ModelCost, hw: HardwareSpec, prompt_tokens: int, output_tokens: int
) -> FloorComparison:
    """The batch is the measured mean number of decoding streams; the context its mean length."""
    batch = max(1, round(s.mean_active_streams or 1))
    context = int(prompt_tokens + output_tokens / 2)
    return compare_at(cost, hw, batch, context, s.tpot_s.p50)
