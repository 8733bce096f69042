"""A model's cost and a device group, as a command states them: a named spec (preset,
config.json, .gguf; a catalogue entry) with stated overrides, or stated numbers alone."""

from __future__ import annotations

from inferlab.errors import SpecError
from inferlab.specs.cost import ModelCost, derive_cost
from inferlab.specs.hardware import STATED, HardwareSpec, get_hardware, with_overrides


def cost_from(
    model: str | None,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    weight_bytes: float | None = None,
    kv_bytes_per_token: float | None = None,
    params: float | None = None,
    tp: int = 1,
) -> ModelCost:
    """A model spec (preset, config.json, .gguf) with stated overrides, or stated numbers alone."""
    if model:
        from inferlab.specs.parallel import check_tp_split
        from inferlab.specs.resolve import resolve_model

        spec = resolve_model(model)
        check_tp_split(spec.name, spec.n_heads, spec.n_kv_heads, tp)
        cost = derive_cost(spec, weight_dtype, kv_dtype)
        return cost.with_overrides(weight_bytes, kv_bytes_per_token, params)
    if weight_bytes is None:
        raise SpecError("name a --model, or state --weight-bytes (e.g. --weight-bytes 16GB)")
    return ModelCost.stated(weight_bytes, kv_bytes_per_token or 0.0, params, weight_dtype)


def hardware_from(
    hardware: str | None,
    bandwidth: float | None = None,
    flops: float | None = None,
    memory: float | None = None,
    tp: int = 1,
    need_bandwidth: bool = True,
) -> HardwareSpec:
    """The whole device group: catalogue or stated figures, scaled for tensor parallelism."""
    base = get_hardware(hardware) if hardware else STATED
    hw = with_overrides(base, bandwidth, flops, memory)
    if need_bandwidth and hw.bandwidth_bytes_per_s <= 0:
        raise SpecError("name a --hardware (e.g. h100-sxm), or state --bandwidth (e.g. 3.35TB/s)")
    if tp < 1:
        raise SpecError("--tp must be 1 or more")
    return hw.scaled(tp)
