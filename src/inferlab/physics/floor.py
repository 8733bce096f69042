"""A floor's inputs, in one value: the model's costs, the hardware's peaks, how many
devices share the work, and a stated context when there is one.

bench compares each level with it, `watch` prices each scrape with it, the demo hands
the same one to both.
"""

from __future__ import annotations

from dataclasses import dataclass

from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec


@dataclass(frozen=True, slots=True)
class Floor:
    cost: ModelCost
    hardware: HardwareSpec
    devices: int = 1  # tensor-parallel devices in `hardware` (engines count bytes per GPU)
    context_tokens: int | None = None  # tokens per running sequence, when stated (--context)

    @property
    def peak_flops_per_s(self) -> float:
        return self.hardware.peak_flops(self.cost.compute_dtype)
