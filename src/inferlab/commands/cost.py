"""`inferlab cost`: $ per million tokens from $/GPU-hour and tok/s, and the ratio of two points."""

from __future__ import annotations

import argparse

from inferlab.commands.flags.argtypes import POSITIVE, POSITIVE_INT
from inferlab.commands.flags.output import add_output, emit, table
from inferlab.errors import InferlabError
from inferlab.physics.price import price_per_million


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("cost", help="$ per million tokens at one or two operating points")
    p.add_argument("--gpu-hour", type=POSITIVE, required=True, help="$ per GPU-hour, e.g. 3")
    p.add_argument("--tokens-per-s", type=POSITIVE, required=True, help="aggregate tok/s, e.g. 200")
    p.add_argument("--vs-tokens-per-s", type=POSITIVE, help="a second operating point to compare")
    p.add_argument("--gpus", type=POSITIVE_INT, default=1, help="GPUs producing that rate (1)")
    add_output(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.gpu_hour <= 0 or args.tokens_per_s <= 0 or args.gpus < 1:
        raise InferlabError("--gpu-hour and --tokens-per-s must be positive, --gpus >= 1")
    a = price_per_million(args.gpu_hour, args.tokens_per_s, args.gpus)
    d = {
        "usd_per_gpu_hour": a.usd_per_gpu_hour,
        "gpus": a.gpus,
        "tokens_per_s": a.tokens_per_s,
        "tokens_per_hour": a.tokens_per_hour,
        "usd_per_million_tokens": a.usd_per_million_tokens,
    }
    rows = [
        ("tokens per hour", f"{a.tokens_per_hour:,.0f}"),
        ("$ per million tokens", f"${a.usd_per_million_tokens:.4g}"),
    ]
    explain = [
        f"tokens/hour = {a.tokens_per_s:g} tok/s x 3600 s = {a.tokens_per_hour:,.0f}",
        f"$/million   = ${a.usd_per_gpu_hour:g}/h x {a.gpus} / {a.tokens_per_hour:,.0f} x 1e6 "
        f"= ${a.usd_per_million_tokens:.4g}",
    ]
    if args.vs_tokens_per_s is not None:
        if args.vs_tokens_per_s <= 0:
            raise InferlabError("--vs-tokens-per-s must be positive")
        b = price_per_million(args.gpu_hour, args.vs_tokens_per_s, args.gpus)
        ratio = a.usd_per_million_tokens / b.usd_per_million_tokens
        d["vs_tokens_per_s"] = b.tokens_per_s
        d["vs_usd_per_million_tokens"] = b.usd_per_million_tokens
        d["cost_ratio"] = ratio
        rows.append(
            (f"at {b.tokens_per_s:g} tok/s", f"${b.usd_per_million_tokens:.4g} per million")
        )
        rows.append(("ratio", f"{ratio:.3g}x " + ("cheaper" if ratio > 1 else "dearer")))
        explain.append(
            f"ratio       = ${a.usd_per_million_tokens:.4g} / ${b.usd_per_million_tokens:.4g}"
            f" = {ratio:.3g}"
        )
    emit(args, d, table(rows), explain)
    return 0
