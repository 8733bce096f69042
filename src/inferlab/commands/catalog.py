"""`inferlab models` and `inferlab hardware`: what is known, with its source."""

from __future__ import annotations

import argparse
from typing import Any

from inferlab.commands.flags.output import add_output, emit
from inferlab.specs.cost import derive_cost
from inferlab.specs.hardware import catalogue, this_machine_path
from inferlab.specs.model import load_preset, preset_names
from inferlab.units import fmt_bandwidth, fmt_bytes, fmt_count


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("models", help="list model presets with parameters, bytes and sources")
    p.add_argument("--weight-dtype", default="bf16", help="weights' dtype for the sizes (bf16)")
    p.add_argument("--kv-dtype", default="bf16", help="KV cache dtype (bf16)")
    add_output(p)
    p.set_defaults(run=run_models)
    h = sub.add_parser("hardware", help="list hardware with bandwidth, FLOPS, memory and sources")
    add_output(h)
    h.set_defaults(run=run_hardware)


def run_models(args: argparse.Namespace) -> int:
    items: list[dict[str, Any]] = []
    lines = [f"{'preset':<16}{'params':>9}{'weights':>12}{'KV/token':>12}  source"]
    for name in preset_names():
        spec = load_preset(name)
        c = derive_cost(spec, args.weight_dtype, args.kv_dtype)
        items.append(
            {
                "name": name,
                "params": c.params_total,
                "weight_bytes_resident": c.weight_bytes_resident,
                "weight_bytes_per_step": c.weight_bytes_per_step(1),
                "kv_bytes_per_token": c.kv_bytes_per_token,
                "n_layers": spec.n_layers,
                "n_kv_heads": spec.n_kv_heads,
                "head_dim": spec.head_dim,
                "moe": spec.is_moe,
                "mla": spec.is_mla,
                "source": spec.source,
            }
        )
        lines.append(
            f"{name:<16}{fmt_count(c.params_total):>9}{fmt_bytes(c.weight_bytes_resident):>12}"
            f"{fmt_bytes(c.kv_bytes_per_token):>12}  {spec.source}"
        )
    emit(
        args,
        {"weight_dtype": args.weight_dtype, "kv_dtype": args.kv_dtype, "models": items},
        lines,
        [],
    )
    return 0


def run_hardware(args: argparse.Namespace) -> int:
    items: list[dict[str, Any]] = []
    lines = [f"{'hardware':<12}{'bandwidth':>12}{'bf16 dense':>16}{'memory':>10}  source"]
    for key, hw in catalogue().items():
        items.append(
            {
                "key": key,
                "name": hw.name,
                "bandwidth_bytes_per_s": hw.bandwidth_bytes_per_s,
                "flops_per_s": hw.flops_per_s,
                "memory_bytes": hw.memory_bytes,
                "interconnect_bytes_per_s": hw.interconnect_bytes_per_s,
                "source": hw.source,
            }
        )
        lines.append(
            f"{key:<12}{fmt_bandwidth(hw.bandwidth_bytes_per_s):>12}"
            f"{hw.flops_per_s['bf16'] / 1e12:>11.4g} TFLOPS{fmt_bytes(hw.memory_bytes):>10}"
            f"  {hw.source}"
        )
    probed = this_machine_path().exists()
    lines.append(
        f"{'this-machine':<12}  "
        + ("measured by `inferlab probe`" if probed else "run `inferlab probe` first")
    )
    emit(args, {"hardware": items, "this_machine_probed": probed}, lines, [])
    return 0
