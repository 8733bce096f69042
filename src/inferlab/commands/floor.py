"""`inferlab floor`: the decode floor at a batch and context, and everything that hangs off it."""

from __future__ import annotations

import argparse
import math
from typing import Any

from inferlab.commands.flags.argtypes import (
    FRACTION,
    NONNEG,
    NONNEG_INT,
    POSITIVE,
    POSITIVE_INT,
    TIME,
)
from inferlab.commands.flags.common import add_hardware, add_model, resolve_cost, resolve_hardware
from inferlab.commands.flags.output import add_output, emit, table
from inferlab.errors import InferlabError
from inferlab.physics.decode import DecodePoint, decode_point
from inferlab.physics.roofline import launch_overhead_s
from inferlab.report.floor_text import FloorQuery, floor_sections


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("floor", help="the decode floor: step time, tok/s, bound, prefill, MBU")
    add_model(p)
    add_hardware(p)
    p.add_argument("--batch", type=POSITIVE_INT, default=1, help="sequences decoding together (1)")
    p.add_argument(
        "--context", type=NONNEG_INT, default=0, help="tokens in each sequence's KV cache (0)"
    )
    p.add_argument("--prompt", type=POSITIVE_INT, help="prefill a prompt of this many tokens")
    p.add_argument(
        "--streams", type=POSITIVE_INT, help="streams decoding while the prompt prefills"
    )
    p.add_argument("--chunk", type=POSITIVE_INT, help="chunked prefill: tokens per chunk")
    p.add_argument(
        "--kernels", type=NONNEG_INT, help="kernels launched per step (with --launch-time)"
    )
    p.add_argument("--launch-time", type=TIME, default=4e-6, help="CPU time per launch (4us)")
    p.add_argument("--overhead", type=TIME, help="fixed per-step overhead, e.g. 1.2ms")
    p.add_argument("--measured-step", type=TIME, help="measured step time / TPOT, e.g. 14ms")
    p.add_argument(
        "--target-tokens-per-s", type=POSITIVE, help="a per-user rate you want to promise"
    )
    p.add_argument("--claimed-tokens-per-s", type=POSITIVE, help="a per-user rate someone measured")
    p.add_argument("--levers", action="store_true", help="rank what each lever does here")
    p.add_argument(
        "--draft-tokens", type=POSITIVE_INT, default=4, help="speculative decoding: k (4)"
    )
    p.add_argument("--acceptance", type=FRACTION, default=0.7, help="draft acceptance rate (0.7)")
    p.add_argument(
        "--draft-cost",
        type=NONNEG,
        default=0.05,
        help="a draft step as a fraction of a target step (0.05)",
    )
    p.add_argument(
        "--gpu-hour", type=NONNEG, help="$ per GPU-hour: price per million at this point"
    )
    add_output(p)
    p.set_defaults(run=run)


def _overhead(args: argparse.Namespace) -> float:
    if args.overhead is not None:
        return float(args.overhead)
    if args.kernels:
        return launch_overhead_s(args.kernels, args.launch_time)
    return 0.0


def query(args: argparse.Namespace) -> FloorQuery:
    """The flags as a FloorQuery; bad values are refused here, at the edge."""
    cost, hw = resolve_cost(args), resolve_hardware(args)
    if args.batch < 1 or args.context < 0:
        raise InferlabError("--batch must be >= 1 and --context >= 0")
    check_step(decode_point(cost, hw, args.batch, args.context, _overhead(args)))
    spec = None
    if args.levers:
        if args.draft_tokens < 1 or not 0 <= args.acceptance <= 1 or args.draft_cost < 0:
            raise InferlabError("--draft-tokens >= 1, --acceptance in [0, 1], --draft-cost >= 0")
        from inferlab.physics.levers import Speculation  # only with --levers: a quick start

        spec = Speculation(args.draft_tokens, args.acceptance, args.draft_cost)
    return FloorQuery(
        cost=cost,
        hw=hw,
        batch=args.batch,
        context=args.context,
        tp=args.tp,
        overhead_s=_overhead(args),
        kernels=args.kernels,
        launch_time_s=args.launch_time,
        prompt_tokens=args.prompt,
        streams=args.streams,
        chunk_tokens=args.chunk,
        measured_step_s=args.measured_step,
        usd_per_gpu_hour=args.gpu_hour,
        target_tokens_per_s=args.target_tokens_per_s,
        claimed_tokens_per_s=args.claimed_tokens_per_s,
        speculation=spec,
    )


def check_step(p: DecodePoint) -> None:
    """A zero or overflowing step cannot be divided into rates: say which inputs did it."""
    if not (math.isfinite(p.step_time_s) and p.step_time_s > 0):
        raise InferlabError(
            f"the decode step comes out as {p.step_time_s:g} s: --weight-bytes (or --model), "
            "--bandwidth and --flops must give a positive, finite step; state real figures"
        )
    if not max(p.step.memory_time_s, p.step.compute_time_s) > 0:
        raise InferlabError(
            "the step reads no bytes and does no FLOPs: give --weight-bytes above 0 (or a --model)"
        )


def compute(args: argparse.Namespace) -> tuple[dict[str, Any], list[str], list[str]]:
    """JSON object, table lines and explain lines: the sections, concatenated."""
    d: dict[str, Any] = {}
    rows: list[tuple[str, str]] = []
    explain: list[str] = []
    for section in floor_sections(query(args)):
        d.update(section.fields)
        rows.extend(section.rows)
        explain.extend(section.explain)
    if not math.isfinite(d.get("peak_flops_per_s", 0.0)):  # null in --json: say why here
        rows.append(
            (
                "peak FLOPS",
                "not stated (--flops or --hardware): compute time counted as 0, so peak, "
                "ridge and intensity are unknown (null in --json)",
            )
        )
    return d, table(rows), explain


def run(args: argparse.Namespace) -> int:
    d, text, explain = compute(args)
    emit(args, d, text, explain)
    return 0
