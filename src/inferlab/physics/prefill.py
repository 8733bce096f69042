"""Prefill: the whole prompt in one pass, weights read once, so FLOPs usually bind.

A long prefill scheduled alone freezes every decoding stream for its duration;
chunked prefill splits it into chunks of K tokens that ride along decode steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferlab.physics.decode import DecodePoint, decode_point
from inferlab.physics.roofline import StepTime, roofline
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec


@dataclass(frozen=True, slots=True)
class PrefillResult:
    prompt_tokens: int
    step: StepTime  # the whole prompt in one pass
    decode: DecodePoint  # the streams' ordinary decode step
    stall_steps: float  # prefill time in decode steps: how long each stream freezes
    chunk_tokens: int | None
    chunks: int
    chunk_step: StepTime | None  # one mixed step: a chunk plus every stream's decode token

    @property
    def prefill_time_s(self) -> float:
        return self.step.step_time_s

    @property
    def max_gap_without_chunks_s(self) -> float:
        return self.decode.step_time_s + self.prefill_time_s

    @property
    def max_gap_s(self) -> float:
        """Longest gap a stream sees: a decode step plus the prefill (or one mixed step)."""
        if self.chunk_step is not None:
            return self.chunk_step.step_time_s
        return self.decode.step_time_s + self.prefill_time_s


def prefill_step(
    cost: ModelCost, hw: HardwareSpec, tokens: int, context_before: int = 0
) -> StepTime:
    flops = cost.prefill_flops(tokens, context_before)
    bytes_moved = (
        cost.weight_bytes_per_step(tokens)
        + cost.kv_bytes(context_before)
        + tokens * cost.kv_bytes_per_token
    )
    return roofline(bytes_moved, flops, hw.bandwidth_bytes_per_s, hw.peak_flops(cost.compute_dtype))


def prefill_stall(
    cost: ModelCost,
    hw: HardwareSpec,
    prompt_tokens: int,
    streams: int = 1,
    context: int = 0,
    chunk_tokens: int | None = None,
    overhead_s: float = 0.0,
) -> PrefillResult:
    """Prefill `prompt_tokens` while `streams` sequences at `context` are decoding."""
    step = prefill_step(cost, hw, prompt_tokens)
    dec = decode_point(cost, hw, max(streams, 1), context, overhead_s)
    chunk_step = None
    chunks = 1
    if chunk_tokens:
        chunks = math.ceil(prompt_tokens / chunk_tokens)
        flops = cost.prefill_flops(chunk_tokens) + dec.flops_per_step
        bytes_moved = dec.bytes_per_step + chunk_tokens * cost.kv_bytes_per_token
        chunk_step = roofline(
            bytes_moved,
            flops,
            hw.bandwidth_bytes_per_s,
            hw.peak_flops(cost.compute_dtype),
            overhead_s,
        )
    return PrefillResult(
        prompt_tokens=prompt_tokens,
        step=step,
        decode=dec,
        stall_steps=step.step_time_s / dec.step_time_s,
        chunk_tokens=chunk_tokens,
        chunks=chunks,
        chunk_step=chunk_step,
    )
