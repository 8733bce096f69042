"""Arguments shared by verbs (model, hardware), read into specs (specs/stated.py)."""

from __future__ import annotations

import argparse

from inferlab.commands.flags.argtypes import BANDWIDTH, BYTES, COUNT, FLOPS, whole
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec
from inferlab.specs.stated import cost_from, hardware_from


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
    g.add_argument(
        "--tp",
        type=whole(1, 4096),
        default=1,
        help="tensor-parallel devices; their bandwidths add (1)",
    )


def resolve_cost(args: argparse.Namespace) -> ModelCost:
    return cost_from(
        args.model,
        args.weight_dtype,
        args.kv_dtype,
        args.weight_bytes,
        args.kv_bytes_per_token,
        args.params,
        getattr(args, "tp", 1),
    )


def resolve_hardware(args: argparse.Namespace) -> HardwareSpec:
    return hardware_from(args.hardware, args.bandwidth, args.flops, args.memory, args.tp)
