"""The roofline step time: the physics floor of the model on the hardware (the max of
FLOPs / peak and bytes / bandwidth), slowed to a stated efficiency, plus a fixed per-step
overhead. What the simulator runs on when nothing was measured."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from inferlab.sim.steptime.base import DecodeBatch, WholeBatch
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec


@dataclass(frozen=True, slots=True)
class RooflineStepTime(WholeBatch):
    cost: ModelCost
    hw: HardwareSpec
    efficiency: float = 1.0  # fraction of the floor's speed reached (MBU-like)
    overhead_s: float = 0.0
    # Looked up once: this model is asked once per engine step.
    _bandwidth: float = field(init=False, repr=False, compare=False)
    _peak: float = field(init=False, repr=False, compare=False)
    _token_flops: float = field(init=False, repr=False, compare=False)
    _attn_flops: float = field(init=False, repr=False, compare=False)  # per context token
    _kv_token_bytes: float = field(init=False, repr=False, compare=False)
    _linear: bool = field(init=False, repr=False, compare=False)  # no sliding window
    _weights: dict[int, float] = field(init=False, repr=False, compare=False)  # by batch tokens

    def __post_init__(self) -> None:
        c = self.cost
        object.__setattr__(self, "_bandwidth", self.hw.bandwidth_bytes_per_s)
        object.__setattr__(self, "_peak", self.hw.peak_flops(c.compute_dtype))
        object.__setattr__(self, "_token_flops", c.flops_per_token(0))
        object.__setattr__(self, "_attn_flops", c.attn_flops_per_context_token)
        object.__setattr__(self, "_kv_token_bytes", c.kv_bytes_per_token)
        object.__setattr__(self, "_linear", c.kv_window_tokens is None)
        object.__setattr__(self, "_weights", {})

    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        tokens = decode.count
        if self._linear:  # cost linear in context: the sum is enough
            ctx = decode.context_sum
            flops = tokens * self._token_flops + self._attn_flops * ctx
            kv = self._kv_token_bytes * ctx
        else:
            c = self.cost
            ctxs = decode.contexts()
            flops = sum(c.flops_per_token(ctx) for ctx in ctxs)
            kv = sum(c.kv_bytes(ctx) for ctx in ctxs)
        for n, before in prefill:
            tokens += n
            flops += self.cost.prefill_flops(n, before)
            kv += self.cost.kv_bytes(before) + n * self._kv_token_bytes
        weights = self._weights.get(tokens)
        if weights is None:
            weights = self._weights[tokens] = self.cost.weight_bytes_per_step(max(tokens, 1))
        # physics.roofline's max(bytes / bandwidth, FLOPs / peak), without its record
        # (or the call to max: this runs once per engine step)
        bytes_s = (weights + kv) / self._bandwidth
        flops_s = flops / self._peak
        floor_s = flops_s if flops_s > bytes_s else bytes_s
        return floor_s / self.efficiency + self.overhead_s
