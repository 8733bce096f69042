"""Step-time models: how long one engine iteration takes for its prefill tokens and decodes.

The simulator asks one question of its model: given the prefill chunks and the
decode contexts in this iteration, how long does it take? Two answers:
  RooflineStepTime  the physics floor (max of FLOPs/peak and bytes/bandwidth),
                    divided by an efficiency, plus a fixed per-step overhead;
  FittedStepTime    a + b x decodes + p x prefill tokens, fitted to a measured sweep
                    (sim/calibrate.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from inferlab.physics.roofline import roofline
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec


class StepTimeModel(Protocol):
    def step_time_s(self, prefill: list[tuple[int, int]], decode_contexts: list[int]) -> float:
        """prefill: (chunk tokens, tokens cached before it) per sequence."""
        ...


@dataclass(frozen=True, slots=True)
class RooflineStepTime:
    cost: ModelCost
    hw: HardwareSpec
    efficiency: float = 1.0  # fraction of the floor's speed reached (MBU-like)
    overhead_s: float = 0.0

    def step_time_s(self, prefill: list[tuple[int, int]], decode_contexts: list[int]) -> float:
        c = self.cost
        tokens = len(decode_contexts) + sum(n for n, _ in prefill)
        flops = sum(c.flops_per_token(ctx) for ctx in decode_contexts)
        flops += sum(c.prefill_flops(n, before) for n, before in prefill)
        kv = sum(c.kv_bytes(ctx) for ctx in decode_contexts)
        kv += sum(c.kv_bytes(before) + n * c.kv_bytes_per_token for n, before in prefill)
        s = roofline(
            c.weight_bytes_per_step(max(tokens, 1)) + kv,
            flops,
            self.hw.bandwidth_bytes_per_s,
            self.hw.peak_flops(c.compute_dtype),
        )
        return max(s.memory_time_s, s.compute_time_s) / self.efficiency + self.overhead_s


@dataclass(frozen=True, slots=True)
class FittedStepTime:
    base_s: float  # a: fixed cost of an iteration
    per_decode_s: float  # b: each decoding sequence
    per_prefill_token_s: float  # p: each prompt token
    source: str = "fitted"

    def step_time_s(self, prefill: list[tuple[int, int]], decode_contexts: list[int]) -> float:
        n_pre = sum(n for n, _ in prefill)
        return (
            self.base_s
            + self.per_decode_s * len(decode_contexts)
            + (self.per_prefill_token_s * n_pre)
        )
