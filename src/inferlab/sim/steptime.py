"""Step-time models: how long one engine iteration takes for its prefill tokens and decodes.

The simulator asks one question of its model: given the prefill chunks and the
decode contexts in this iteration, how long does it take? Two answers:
  RooflineStepTime  the physics floor (max of FLOPs/peak and bytes/bandwidth),
                    divided by an efficiency, plus a fixed per-step overhead;
  FittedStepTime    a + b x decodes + p x prefill tokens, fitted to a measured sweep
                    (sim/calibrate.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec


@dataclass(slots=True)  # not frozen: one is built per engine step, and frozen init is slower
class DecodeBatch:
    """The decoding sequences of one step: how many, their contexts summed, and (on demand,
    for models whose cost is not linear in context, e.g. sliding-window attention) each."""

    count: int
    context_sum: int
    contexts: Callable[[], list[int]]

    @classmethod
    def of(cls, contexts: list[int]) -> DecodeBatch:
        return cls(len(contexts), sum(contexts), lambda: contexts)


class StepTimeModel(Protocol):
    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        """prefill: (chunk tokens, tokens cached before it) per sequence."""
        ...


@dataclass(frozen=True, slots=True)
class RooflineStepTime:
    cost: ModelCost
    hw: HardwareSpec
    efficiency: float = 1.0  # fraction of the floor's speed reached (MBU-like)
    overhead_s: float = 0.0
    # Looked up once: this model is asked once per engine step.
    _bandwidth: float = field(init=False, repr=False, compare=False)
    _peak: float = field(init=False, repr=False, compare=False)
    _token_flops: float = field(init=False, repr=False, compare=False)
    _weights: dict[int, float] = field(init=False, repr=False, compare=False)  # by batch tokens

    def __post_init__(self) -> None:
        object.__setattr__(self, "_bandwidth", self.hw.bandwidth_bytes_per_s)
        object.__setattr__(self, "_peak", self.hw.peak_flops(self.cost.compute_dtype))
        object.__setattr__(self, "_token_flops", self.cost.flops_per_token(0))
        object.__setattr__(self, "_weights", {})

    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        c = self.cost
        tokens = decode.count
        if c.kv_window_tokens is None:  # cost linear in context: the sum is enough
            flops = tokens * self._token_flops
            flops += c.attn_flops_per_context_token * decode.context_sum
            kv = c.kv_bytes_per_token * decode.context_sum
        else:
            ctxs = decode.contexts()
            flops = sum(c.flops_per_token(ctx) for ctx in ctxs)
            kv = sum(c.kv_bytes(ctx) for ctx in ctxs)
        for n, before in prefill:
            tokens += n
            flops += c.prefill_flops(n, before)
            kv += c.kv_bytes(before) + n * c.kv_bytes_per_token
        weights = self._weights.get(tokens)
        if weights is None:
            weights = self._weights[tokens] = c.weight_bytes_per_step(max(tokens, 1))
        moved = weights + kv
        # physics.roofline's max(bytes / bandwidth, FLOPs / peak), without its record
        floor_s = max(moved / self._bandwidth, flops / self._peak)
        return floor_s / self.efficiency + self.overhead_s


@dataclass(frozen=True, slots=True)
class FittedStepTime:
    base_s: float  # a: fixed cost of an iteration
    per_decode_s: float  # b: each decoding sequence
    per_prefill_token_s: float  # p: each prompt token
    source: str = "fitted"

    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        n_pre = sum(n for n, _ in prefill)
        return self.base_s + self.per_decode_s * decode.count + (self.per_prefill_token_s * n_pre)
