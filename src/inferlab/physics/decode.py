"""Decode: one step reads the weights once for the batch and every sequence's own KV."""

from __future__ import annotations

from dataclasses import dataclass

from inferlab.physics.roofline import StepTime, roofline
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec


@dataclass(frozen=True, slots=True)
class DecodePoint:
    batch: int
    context: int
    weight_bytes_per_step: float
    kv_bytes_per_sequence: float
    kv_bytes_total: float
    bytes_per_step: float
    flops_per_step: float
    step: StepTime

    @property
    def step_time_s(self) -> float:
        return self.step.step_time_s

    @property
    def tokens_per_s_per_user(self) -> float:
        return 1.0 / self.step.step_time_s

    @property
    def tokens_per_s_total(self) -> float:
        return self.batch / self.step.step_time_s


def decode_point(
    cost: ModelCost, hw: HardwareSpec, batch: int, context: int, overhead_s: float = 0.0
) -> DecodePoint:
    """`hw` is the whole group of devices (see HardwareSpec.scaled for tensor parallelism)."""
    weights = cost.weight_bytes_per_step(batch)
    kv_seq = cost.kv_bytes(context)
    kv_total = batch * kv_seq
    flops = batch * cost.flops_per_token(context)
    step = roofline(
        weights + kv_total,
        flops,
        hw.bandwidth_bytes_per_s,
        hw.peak_flops(cost.compute_dtype),
        overhead_s,
    )
    return DecodePoint(batch, context, weights, kv_seq, kv_total, weights + kv_total, flops, step)


def compute_bound_batch(cost: ModelCost, hw: HardwareSpec, context: int) -> float | None:
    """Smallest batch at which decode turns compute-bound at this context; None if never.

    batch * flops_tok / peak >= (weights + batch * kv_seq) / bw; weights are
    shared by the batch, KV bytes are not, so long contexts push it away or
    forbid it (when one sequence's KV read outlasts its FLOPs).
    """
    peak = hw.peak_flops(cost.compute_dtype)
    bw = hw.bandwidth_bytes_per_s
    per_seq = cost.flops_per_token(context) / peak - cost.kv_bytes(context) / bw
    if per_seq <= 0:
        return None
    return (cost.weight_bytes_per_step(1) / bw) / per_seq
