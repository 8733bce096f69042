"""Arguments shared by verbs (model, hardware, output) and turning them into specs."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any

from inferlab import units
from inferlab.errors import InferlabError, SpecError
from inferlab.jsonio import dumps
from inferlab.specs.cost import ModelCost, derive_cost
from inferlab.specs.hardware import STATED, HardwareSpec, get_hardware, with_overrides


def unit_arg(parse: Callable[[str], float]) -> Callable[[str], float]:
    """Wrap a unit parser so argparse names the flag in its error."""

    def _parse(text: str) -> float:
        try:
            value = parse(text)
        except InferlabError as e:
            raise argparse.ArgumentTypeError(str(e)) from e
        if value < 0 or math.isnan(value):
            raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
        return value

    _parse.__name__ = parse.__name__.replace("parse_", "")
    return _parse


BYTES = unit_arg(units.parse_bytes)
BANDWIDTH = unit_arg(units.parse_bandwidth)
FLOPS = unit_arg(units.parse_flops)
TIME = unit_arg(units.parse_time)
COUNT = unit_arg(units.parse_count)
RATE = unit_arg(units.parse_rate)


def _number_list(text: str, cast: Callable[[str], float], example: str) -> list[Any]:
    try:
        values = [cast(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: write numbers like {example}") from e
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give positive numbers, e.g. {example}")
    return values


def int_list(text: str) -> list[int]:
    """'1,2,4,8' -> [1, 2, 4, 8] (concurrency levels)."""
    return _number_list(text, int, "1,2,4,8")


def float_list(text: str) -> list[float]:
    """'4,8,16' or '4/s,8/s' -> [4.0, 8.0] (request rates)."""
    return _number_list(text, lambda x: float(x.removesuffix("/s")), "4,8,16")


def add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object (keys carry units)")
    p.add_argument(
        "--explain", action="store_true", help="print the derivation, numbers plugged in"
    )


def add_model(p: argparse.ArgumentParser, required: bool = False) -> None:
    g = p.add_argument_group("model (derived from a spec, or stated)")
    g.add_argument("--model", help="preset name, config.json / model folder, or .gguf file")
    g.add_argument("--weight-dtype", default="bf16", help="bf16, fp8, int8, int4, q4_0, ... (bf16)")
    g.add_argument("--kv-dtype", default="bf16", help="KV cache dtype (bf16)")
    g.add_argument("--weight-bytes", type=BYTES, help="state the weight bytes, e.g. 16GB")
    g.add_argument("--kv-bytes-per-token", type=BYTES, help="state KV per token, e.g. 128KiB")
    g.add_argument("--params", type=COUNT, help="state the parameter count, e.g. 8B")


def add_hardware(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("hardware (a catalogue entry, or stated)")
    g.add_argument("--hardware", help="h100-sxm, h200, a100-80gb, ..., this-machine")
    g.add_argument("--bandwidth", type=BANDWIDTH, help="state memory bandwidth, e.g. 3.35TB/s")
    g.add_argument("--flops", type=FLOPS, help="state dense peak FLOPS, e.g. 989TFLOPS")
    g.add_argument("--memory", type=BYTES, help="state memory capacity, e.g. 80GB")
    g.add_argument("--tp", type=int, default=1, help="tensor-parallel devices (bandwidths add)")


def cost_from(
    model: str | None,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    weight_bytes: float | None = None,
    kv_bytes_per_token: float | None = None,
    params: float | None = None,
) -> ModelCost:
    """A model spec (preset, config.json, .gguf) with stated overrides, or stated numbers alone."""
    if model:
        from inferlab.specs.resolve import resolve_model

        cost = derive_cost(resolve_model(model), weight_dtype, kv_dtype)
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
) -> HardwareSpec:
    """The whole device group: catalogue or stated figures, scaled for tensor parallelism."""
    base = get_hardware(hardware) if hardware else STATED
    hw = with_overrides(base, bandwidth, flops, memory)
    if hw.bandwidth_bytes_per_s <= 0:
        raise SpecError("name a --hardware (e.g. h100-sxm), or state --bandwidth (e.g. 3.35TB/s)")
    if tp < 1:
        raise SpecError("--tp must be 1 or more")
    return hw.scaled(tp)


def resolve_cost(args: argparse.Namespace) -> ModelCost:
    return cost_from(
        args.model,
        args.weight_dtype,
        args.kv_dtype,
        args.weight_bytes,
        args.kv_bytes_per_token,
        args.params,
    )


def resolve_hardware(args: argparse.Namespace) -> HardwareSpec:
    return hardware_from(args.hardware, args.bandwidth, args.flops, args.memory, args.tp)


def emit(
    args: argparse.Namespace, data: dict[str, Any], text: list[str], explain: list[str]
) -> None:
    """--json prints the object; otherwise the text, and the derivation with --explain."""
    if args.json:
        sys.stdout.write(dumps(data) + "\n")  # strict: a non-finite number prints as null
        return
    if args.explain and explain:
        print("\n".join(explain))
        print()
    print("\n".join(text))


def table(rows: list[tuple[str, str]]) -> list[str]:
    width = max((len(k) for k, _ in rows), default=0)
    return [f"{k:<{width}}  {v}" for k, v in rows]
