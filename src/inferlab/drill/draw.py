"""Fresh numbers for a card: preset model x dtype x catalogue hardware x TP, stated aloud.

The figures are derived from specs/ (presets and the hardware catalogue), then
rounded the way a card states them ("16 GB of weights", "128 KiB per token"),
and from then on the card works only with the stated numbers, exactly as the
`floor --weight-bytes 16GB --bandwidth 3.35TB/s ...` verbs do.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from inferlab.specs.cost import ModelCost, derive_cost
from inferlab.specs.hardware import STATED, HardwareSpec, get_hardware, with_overrides
from inferlab.specs.model import load_preset

# Dense models only: a stated weight size is read whole each step, which MoE models do not do.
MODEL_NAMES = {
    "llama-3-8b": "Llama 3 8B",
    "llama-2-7b": "Llama 2 7B",
    "mistral-7b": "Mistral 7B",
    "qwen2.5-7b": "Qwen2.5 7B",
    "llama-2-13b": "Llama 2 13B",
    "llama-3-70b": "Llama 3 70B",
    "llama-2-70b": "Llama 2 70B",
    "qwen2.5-72b": "Qwen2.5 72B",
}
HARDWARE_NAMES = {
    "h100-sxm": "H100 SXM",
    "h100-pcie": "H100 PCIe",
    "h200": "H200",
    "b200": "B200",
    "a100-80gb": "A100 80GB",
    "a100-40gb": "A100 40GB",
    "l40s": "L40S",
    "l4": "L4",
    "mi300x": "MI300X",
    "rtx-4090": "RTX 4090",
}
WEIGHT_DTYPES = ("bf16", "bf16", "fp8", "int8", "int4")  # bf16 twice: the deck's usual case
TP_CHOICES = (1, 2, 4, 8)


def round_sig(x: float, digits: int = 2) -> float:
    """16.06e9 -> 16e9, 141.1e9 -> 140e9: the number a person says aloud."""
    if x == 0 or not math.isfinite(x):
        return x
    k = math.floor(math.log10(abs(x))) - (digits - 1)
    if k >= 0:  # integer powers of ten keep 16e9 exact
        return float(round(x / 10**k) * 10**k)
    return round(x, -k)


@dataclass(frozen=True, slots=True)
class Setup:
    """A model on a group of devices, every figure as the card states it."""

    model: str  # preset key
    weight_dtype: str
    weight_bytes: float
    params: float
    kv_bytes_per_token: float
    hardware: str  # catalogue key
    bandwidth_bytes_per_s: float  # per device
    peak_flops_per_s: float  # per device, at the weights' compute dtype
    memory_bytes: float  # per device
    tp: int

    @property
    def model_name(self) -> str:
        return MODEL_NAMES[self.model]

    @property
    def hardware_name(self) -> str:
        return HARDWARE_NAMES[self.hardware]

    def cost(self) -> ModelCost:
        return ModelCost.stated(
            self.weight_bytes, self.kv_bytes_per_token, self.params, self.weight_dtype
        )

    def devices(self, tp: int | None = None) -> HardwareSpec:
        """The device group (bandwidths add under TP); tp=1 gives one device's figures."""
        one = with_overrides(
            STATED, self.bandwidth_bytes_per_s, self.peak_flops_per_s, self.memory_bytes
        )
        return one.scaled(self.tp if tp is None else tp)

    def argv(self) -> list[str]:
        """The same stated numbers as flags of floor/capacity (what `--explain` runs)."""
        return [
            "--weight-bytes",
            f"{self.weight_bytes / 1e9:g}GB",
            "--params",
            f"{self.params / 1e9:g}B",
            "--weight-dtype",
            self.weight_dtype,
            "--kv-bytes-per-token",
            f"{self.kv_bytes_per_token / 1024:g}KiB",
            "--bandwidth",
            f"{self.bandwidth_bytes_per_s / 1e12:g}TB/s",
            "--flops",
            f"{self.peak_flops_per_s / 1e12:g}TFLOPS",
            "--memory",
            f"{self.memory_bytes / 1e9:g}GB",
            "--tp",
            str(self.tp),
        ]


@dataclass(frozen=True, slots=True)
class Want:
    """What a card needs of its setup."""

    min_tp: int = 1
    max_tp: int = 8
    weight_share: float = 0.5  # weights may fill at most this share of the group's memory
    dtypes: tuple[str, ...] = WEIGHT_DTYPES


def draw_setup(rng: random.Random, want: Want = Want()) -> Setup:
    """A preset model in a dtype on catalogue hardware, with the smallest TP that leaves room."""
    for _ in range(200):
        model = rng.choice(sorted(MODEL_NAMES))
        hw = get_hardware(rng.choice(sorted(HARDWARE_NAMES)))
        wd = rng.choice(want.dtypes)
        if wd == "fp8" and "fp8" not in hw.flops_per_s:
            continue  # no FP8 tensor cores on this chip
        kvd = "fp8" if "fp8" in hw.flops_per_s and rng.random() < 0.3 else "bf16"
        derived = derive_cost(load_preset(model), wd, kvd)
        weight = round_sig(derived.weight_bytes_resident, 2)
        tps = [
            t
            for t in TP_CHOICES
            if want.min_tp <= t <= want.max_tp and weight <= want.weight_share * hw.memory_bytes * t
        ]
        if not tps:
            continue
        return Setup(
            model=model,
            weight_dtype=wd,
            weight_bytes=weight,
            params=round_sig(derived.params_total, 2),
            kv_bytes_per_token=derived.kv_bytes_per_token,  # a whole number of KiB already
            hardware=hw.key,
            bandwidth_bytes_per_s=hw.bandwidth_bytes_per_s,
            peak_flops_per_s=hw.peak_flops(derived.compute_dtype),
            memory_bytes=hw.memory_bytes,
            tp=tps[0],
        )
    raise RuntimeError("no setup fits the card's constraints")  # a bug in a kind's Want
