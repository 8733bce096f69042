"""A floor's inputs, in one value: the model's costs, the hardware's peaks, how many
devices share the work, and a stated context when there is one.

bench compares each level with it, `watch` prices each scrape with it, the demo hands
the same one to both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec

if TYPE_CHECKING:
    from inferlab.summary import FloorBlock


@dataclass(frozen=True, slots=True)
class Floor:
    cost: ModelCost
    hardware: HardwareSpec
    devices: int = 1  # tensor-parallel devices in `hardware` (engines count bytes per GPU)
    context_tokens: int | None = None  # tokens per running sequence, when stated (--context)

    @property
    def peak_flops_per_s(self) -> float:
        return self.hardware.peak_flops(self.cost.compute_dtype)


def floor_block(f: Floor) -> FloorBlock:
    """The floor's inputs as a summary records them (bench's run and a judged peer's file)."""
    from inferlab.summary import FloorBlock  # the schema, only when a summary is written

    cost, hw = f.cost, f.hardware
    return FloorBlock(
        model=cost.name,
        model_source=cost.source,
        weight_bytes_resident=cost.weight_bytes_resident,
        weight_bytes_per_step=cost.weight_bytes_per_step(1),
        kv_bytes_per_token=cost.kv_bytes_per_token,
        hardware=hw.name,
        hardware_source=hw.source,
        bandwidth_bytes_per_s=hw.bandwidth_bytes_per_s,
        peak_flops_per_s=f.peak_flops_per_s,
    )
