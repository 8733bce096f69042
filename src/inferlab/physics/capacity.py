"""Memory capacity: how many sequences' KV caches fit beside the weights."""

from __future__ import annotations

from dataclasses import dataclass

from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec


@dataclass(frozen=True, slots=True)
class Capacity:
    memory_bytes: float
    weight_bytes: float
    reserve_bytes: float
    free_for_kv_bytes: float
    kv_bytes_per_sequence: float
    max_batch: int  # 0 when not even one sequence fits
    max_context_at_batch_1: int


def capacity(
    cost: ModelCost, hw: HardwareSpec, context: int, reserve_bytes: float = 0.0
) -> Capacity:
    """`hw` is the whole device group; `reserve_bytes` covers activations, CUDA context, etc."""
    free = hw.memory_bytes - cost.weight_bytes_resident - reserve_bytes
    kv_seq = cost.kv_bytes(context)
    max_batch = int(free // kv_seq) if kv_seq > 0 and free > 0 else 0
    max_ctx = (
        int(free // cost.kv_bytes_per_token) if cost.kv_bytes_per_token > 0 and free > 0 else 0
    )
    return Capacity(
        memory_bytes=hw.memory_bytes,
        weight_bytes=cost.weight_bytes_resident,
        reserve_bytes=reserve_bytes,
        free_for_kv_bytes=max(free, 0.0),
        kv_bytes_per_sequence=kv_seq,
        max_batch=max_batch,
        max_context_at_batch_1=max_ctx,
    )
