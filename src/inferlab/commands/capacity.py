"""`inferlab capacity`: how many sequences fit in memory beside the weights."""

from __future__ import annotations

import argparse

from inferlab.commands.flags.argtypes import BYTES, POSITIVE_INT
from inferlab.commands.flags.common import add_hardware, add_model, resolve_cost
from inferlab.commands.flags.output import add_output, emit, table
from inferlab.errors import InferlabError
from inferlab.physics.capacity import capacity
from inferlab.specs.stated import hardware_from
from inferlab.units import fmt_bytes as fb


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("capacity", help="max batch that fits: weights + KV + reserve <= memory")
    add_model(p)
    add_hardware(p)
    p.add_argument("--context", type=POSITIVE_INT, required=True, help="tokens per sequence")
    p.add_argument(
        "--reserve",
        type=BYTES,
        default=0.0,
        help="memory kept back for activations and the runtime (0)",
    )
    add_output(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    c = resolve_cost(args)
    # Capacity is memory, weights and KV alone: no bandwidth needed.
    hw = hardware_from(args.hardware, args.bandwidth, args.flops, args.memory, args.tp, False)
    if hw.memory_bytes <= 0:
        raise InferlabError("no memory capacity known: name a --hardware or state --memory 80GB")
    if args.context <= 0:
        raise InferlabError("--context must be positive")
    cap = capacity(c, hw, args.context, args.reserve)
    d = {
        "model": c.name,
        "hardware": hw.name,
        "tp": args.tp,
        "context_tokens": args.context,
        "memory_bytes": cap.memory_bytes,
        "weight_bytes_resident": cap.weight_bytes,
        "reserve_bytes": cap.reserve_bytes,
        "free_for_kv_bytes": cap.free_for_kv_bytes,
        "kv_bytes_per_token": c.kv_bytes_per_token,
        "kv_bytes_per_sequence": cap.kv_bytes_per_sequence,
        "max_batch": cap.max_batch,
        "max_context_tokens_at_batch_1": cap.max_context_at_batch_1,
    }
    rows = [
        ("memory", fb(cap.memory_bytes)),
        ("weights", fb(cap.weight_bytes)),
        ("reserve", fb(cap.reserve_bytes)),
        ("free for KV", fb(cap.free_for_kv_bytes)),
        ("KV per sequence", f"{fb(cap.kv_bytes_per_sequence)} ({args.context} tokens)"),
        ("max batch", str(cap.max_batch)),
        ("max context at batch 1", f"{cap.max_context_at_batch_1} tokens"),
    ]
    explain = [
        f"free for KV = {fb(cap.memory_bytes)} - {fb(cap.weight_bytes)} - {fb(cap.reserve_bytes)} "
        f"= {fb(cap.free_for_kv_bytes)}",
        f"KV/sequence = {fb(c.kv_bytes_per_token)}/token x {c.cached_tokens(args.context)} tokens "
        f"= {fb(cap.kv_bytes_per_sequence)}",
        f"max batch   = floor({fb(cap.free_for_kv_bytes)} / {fb(cap.kv_bytes_per_sequence)}) "
        f"= {cap.max_batch}",
    ]
    if cap.max_batch == 0:
        rows.append(("warning", "not even one sequence fits at this context"))
    emit(args, d, table(rows), explain)
    return 0
