"""`inferlab floor`: the decode floor at a batch and context, and everything that hangs off it."""

from __future__ import annotations

import argparse
import math
from typing import Any

from inferlab.commands.common import (
    FRACTION,
    NONNEG,
    NONNEG_INT,
    POSITIVE,
    POSITIVE_INT,
    TIME,
    add_hardware,
    add_model,
    add_output,
    emit,
    resolve_cost,
    resolve_hardware,
    table,
)
from inferlab.errors import InferlabError
from inferlab.physics.capacity import capacity
from inferlab.physics.decode import DecodePoint, compute_bound_batch, decode_point
from inferlab.physics.levers import levers
from inferlab.physics.measured import check_claim, utilisation
from inferlab.physics.prefill import prefill_stall
from inferlab.physics.price import price_per_million
from inferlab.physics.roofline import launch_overhead_s, ridge_point
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec
from inferlab.units import fmt_bandwidth as fbw
from inferlab.units import fmt_bytes as fb
from inferlab.units import fmt_bytes_iec
from inferlab.units import fmt_flops as ffl
from inferlab.units import fmt_pct as fpct
from inferlab.units import fmt_time as ft


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


def _decode_explain(c: ModelCost, hw: HardwareSpec, p: DecodePoint) -> list[str]:
    peak = hw.peak_flops(c.compute_dtype)
    s = p.step
    lines = [
        f"weights per step   = {fb(p.weight_bytes_per_step)}"
        + (
            " (stated)"
            if c.source.endswith("stated") or c.name == "stated"
            else " (dense + head; embedding reads 1 row per sequence; MoE: experts touched)"
        ),
        f"KV per sequence    = {fmt_bytes_iec(c.kv_bytes_per_token)}/token x "
        f"{c.cached_tokens(p.context)} "
        f"tokens = {fb(p.kv_bytes_per_sequence)}",
        f"bytes per step     = {fb(p.weight_bytes_per_step)} + {p.batch} x "
        f"{fb(p.kv_bytes_per_sequence)} = {fb(p.bytes_per_step)}",
        f"memory time        = {fb(s.bytes)} / {fbw(hw.bandwidth_bytes_per_s)} "
        f"= {ft(s.memory_time_s)}",
        f"compute time       = {p.batch} x {p.flops_per_step / p.batch:.4g} FLOP / {ffl(peak)} "
        f"= {ft(s.compute_time_s)}",
        f"step time          = max({ft(s.memory_time_s)}, {ft(s.compute_time_s)}) + "
        f"{ft(s.overhead_s)} overhead = {ft(s.step_time_s)} ({s.bound}-bound)",
        f"per-user rate      = 1 / {ft(s.step_time_s)} = {p.tokens_per_s_per_user:.4g} tok/s",
        f"aggregate rate     = {p.batch} / {ft(s.step_time_s)} = {p.tokens_per_s_total:.4g} tok/s",
    ]
    return lines


def compute(args: argparse.Namespace) -> tuple[dict[str, Any], list[str], list[str]]:
    c = resolve_cost(args)
    hw = resolve_hardware(args)
    if args.batch < 1 or args.context < 0:
        raise InferlabError("--batch must be >= 1 and --context >= 0")
    ovh = _overhead(args)
    p = decode_point(c, hw, args.batch, args.context, ovh)
    check_step(p.step_time_s)
    if not max(p.step.memory_time_s, p.step.compute_time_s) > 0:
        raise InferlabError(
            "the step reads no bytes and does no FLOPs: give --weight-bytes above 0 (or a --model)"
        )
    p1 = decode_point(c, hw, 1, args.context, ovh)
    peak = hw.peak_flops(c.compute_dtype)
    ridge = ridge_point(peak, hw.bandwidth_bytes_per_s)
    cb = compute_bound_batch(c, hw, args.context)
    cb0 = compute_bound_batch(c, hw, 0)
    d: dict[str, Any] = {
        "model": c.name,
        "model_source": c.source,
        "hardware": hw.name,
        "hardware_source": hw.source,
        "tp": args.tp,
        "weight_dtype": c.weight_dtype,
        "kv_dtype": c.kv_dtype,
        "batch": args.batch,
        "context_tokens": args.context,
        "params": c.params_total,
        "weight_bytes_resident": c.weight_bytes_resident,
        "weight_bytes_per_step": p.weight_bytes_per_step,
        "kv_bytes_per_token": c.kv_bytes_per_token,
        "kv_bytes_per_sequence": p.kv_bytes_per_sequence,
        "kv_bytes_total": p.kv_bytes_total,
        "bytes_per_step": p.bytes_per_step,
        "flops_per_step": p.flops_per_step,
        "bandwidth_bytes_per_s": hw.bandwidth_bytes_per_s,
        "peak_flops_per_s": peak,
        "memory_time_s": p.step.memory_time_s,
        "compute_time_s": p.step.compute_time_s,
        "overhead_s": ovh,
        "overhead_share": p.step.overhead_share,
        "decode_step_time_s": p.step_time_s,
        "decode_bound": p.step.bound,
        "tokens_per_s_per_user": p.tokens_per_s_per_user,
        "tokens_per_s_total": p.tokens_per_s_total,
        "batch1_step_time_s": p1.step_time_s,
        "slowdown_vs_batch1": p.step_time_s / p1.step_time_s,
        "total_speedup_vs_batch1": p.tokens_per_s_total / p1.tokens_per_s_total,
        "ridge_flops_per_byte": ridge,
        "intensity_flops_per_byte": p.step.intensity_flops_per_byte,
        "compute_bound_batch": cb,
        "compute_bound_batch_without_kv": cb0,
    }
    rows = [
        ("model", f"{c.name} ({c.weight_dtype} weights, {c.kv_dtype} KV)"),
        ("hardware", f"{hw.name}" + (f" (TP {args.tp})" if args.tp > 1 else "")),
        ("weights resident", fb(c.weight_bytes_resident)),
        ("weights per step", fb(p.weight_bytes_per_step)),
        ("KV per token", fmt_bytes_iec(c.kv_bytes_per_token)),
        ("KV per step", f"{fb(p.kv_bytes_total)} ({args.batch} x {args.context} tokens)"),
        ("bytes per step", fb(p.bytes_per_step)),
        ("decode step", f"{ft(p.step_time_s)} ({p.step.bound}-bound)"),
        ("per-user rate", f"{p.tokens_per_s_per_user:.4g} tok/s"),
        ("aggregate rate", f"{p.tokens_per_s_total:.4g} tok/s"),
    ]
    if args.batch > 1:
        rows.append(
            (
                "vs batch 1",
                f"each user {d['slowdown_vs_batch1']:.3g}x slower, "
                f"total {d['total_speedup_vs_batch1']:.3g}x (not {args.batch}x)",
            )
        )
    if ovh:
        rows.append(("per-step overhead", f"{ft(ovh)} = {fpct(p.step.overhead_share)} of the step"))
    rows.append(
        ("ridge point", f"{ridge:.4g} FLOP/B; this step {p.step.intensity_flops_per_byte:.3g}")
    )
    if not math.isfinite(peak):  # --json carries null for these: say why here
        rows.append(
            (
                "peak FLOPS",
                "not stated (--flops or --hardware): compute time counted as 0, "
                "so peak, ridge and intensity are unknown (null in --json)",
            )
        )
    rows.append(
        ("compute-bound at", _cb_text(cb, args.context) + f"; without KV: {_cb_text(cb0, 0)}")
    )
    explain = _decode_explain(c, hw, p)
    explain.append(
        f"ridge point        = {ffl(peak)} / {fbw(hw.bandwidth_bytes_per_s)} = {ridge:.4g} FLOP/B"
    )
    if ovh and args.kernels:
        explain.append(
            f"launch overhead    = {args.kernels} kernels x {ft(args.launch_time)} = {ft(ovh)}"
        )

    if hw.memory_bytes > 0 and c.kv_bytes_per_token > 0 and args.context > 0:
        cap = capacity(c, hw, args.context)
        d["max_batch"] = cap.max_batch
        rows.append(
            ("max batch", f"{cap.max_batch} at {args.context} tokens in {fb(hw.memory_bytes)}")
        )
        explain.append(
            f"max batch          = floor(({fb(hw.memory_bytes)} - {fb(cap.weight_bytes)}) / "
            f"{fb(cap.kv_bytes_per_sequence)}) = {cap.max_batch}"
        )

    if args.prompt:
        pf = prefill_stall(
            c, hw, args.prompt, args.streams or args.batch, args.context, args.chunk, ovh
        )
        d.update(
            prompt_tokens=args.prompt,
            streams=args.streams or args.batch,
            prefill_flops=pf.step.flops,
            prefill_time_s=pf.prefill_time_s,
            prefill_bound=pf.step.bound,
            stall_steps=pf.stall_steps,
            stall_time_s=pf.prefill_time_s,
            max_gap_s=pf.max_gap_s,
        )
        rows.append(
            (
                "prefill",
                f"{args.prompt} tokens: {ft(pf.prefill_time_s)} ({pf.step.bound}-bound)"
                f" = {pf.stall_steps:.3g} decode steps",
            )
        )
        rows.append(
            (
                "stall",
                f"each of {d['streams']} streams freezes {ft(pf.prefill_time_s)} "
                f"(~{pf.stall_steps:.3g} steps)",
            )
        )
        explain.append(
            f"prefill FLOPs      = {pf.step.flops:.4g} FLOP (2 x params x tokens + attention)"
        )
        explain.append(
            f"prefill time       = max({pf.step.flops:.4g} / {ffl(peak)}, {fb(pf.step.bytes)} / "
            f"{fbw(hw.bandwidth_bytes_per_s)}) = {ft(pf.prefill_time_s)}"
        )
        explain.append(
            f"stall              = {ft(pf.prefill_time_s)} / {ft(pf.decode.step_time_s)} "
            f"= {pf.stall_steps:.3g} decode steps"
        )
        if pf.chunk_step is not None:
            d.update(
                chunk_tokens=args.chunk,
                chunks=pf.chunks,
                chunk_step_time_s=pf.chunk_step.step_time_s,
            )
            rows.append(
                (
                    "chunked prefill",
                    f"{pf.chunks} chunks of {args.chunk}: longest gap "
                    f"{ft(pf.chunk_step.step_time_s)} instead of {ft(pf.max_gap_without_chunks_s)}",
                )
            )

    if args.measured_step:
        u = utilisation(
            p.bytes_per_step,
            p.flops_per_step,
            args.measured_step,
            hw.bandwidth_bytes_per_s,
            peak,
            p.step_time_s,
        )
        d.update(
            measured_step_time_s=u.measured_step_time_s,
            achieved_bandwidth_bytes_per_s=u.achieved_bandwidth_bytes_per_s,
            achieved_flops_per_s=u.achieved_flops_per_s,
            mbu=u.mbu,
            mfu=u.mfu,
            floor_over_measured=u.floor_over_measured,
        )
        rows.append(
            ("achieved bandwidth", f"{fbw(u.achieved_bandwidth_bytes_per_s)} = MBU {fpct(u.mbu)}")
        )
        rows.append(("achieved FLOPS", f"{ffl(u.achieved_flops_per_s)} = MFU {fpct(u.mfu)}"))
        explain.append(
            f"achieved bandwidth = {fb(p.bytes_per_step)} / {ft(args.measured_step)} = "
            f"{fbw(u.achieved_bandwidth_bytes_per_s)}"
        )
        explain.append(
            f"MBU                = {fbw(u.achieved_bandwidth_bytes_per_s)} / "
            f"{fbw(hw.bandwidth_bytes_per_s)} = {fpct(u.mbu)}"
        )
        explain.append(
            f"MFU                = {ffl(u.achieved_flops_per_s)} / {ffl(peak)} = {fpct(u.mfu)}"
        )
        if u.floor_over_measured > 1.001:
            d["measured_below_floor"] = True
            rows.append(
                (
                    "IMPOSSIBLE",
                    "measured step is faster than the floor: check the clock "
                    "(synchronize before stopping it) and the token count",
                )
            )

    if args.gpu_hour is not None:
        price = price_per_million(args.gpu_hour, p.tokens_per_s_total, args.tp)
        d["usd_per_gpu_hour"] = args.gpu_hour
        d["usd_per_million_tokens"] = price.usd_per_million_tokens
        rows.append(
            (
                "price at the floor",
                f"${price.usd_per_million_tokens:.4g} per million tokens "
                f"({args.tp} GPU(s) at ${args.gpu_hour:g}/h, {p.tokens_per_s_total:.4g} tok/s)",
            )
        )
        explain.append(
            f"price              = ${args.gpu_hour:g}/h x {args.tp} / "
            f"({p.tokens_per_s_total:.4g} tok/s x 3600 s) x 1e6 = "
            f"${price.usd_per_million_tokens:.4g}"
        )

    ceiling = p.tokens_per_s_per_user
    for flag, label in (("target_tokens_per_s", "target"), ("claimed_tokens_per_s", "claimed")):
        rate = getattr(args, flag)
        if rate is None:
            continue
        chk = check_claim(rate, ceiling)
        d[f"{label}_tokens_per_s"] = rate
        d[f"{label}_possible"] = chk.possible
        verdict = (
            "within the ceiling"
            if chk.possible
            else (
                "cannot be promised: above the physical ceiling"
                if label == "target"
                else "IMPOSSIBLE: above the physical ceiling"
            )
        )
        rows.append((f"{label} {rate:g} tok/s", f"{verdict} of {ceiling:.4g} tok/s per user"))
        if not chk.possible and label == "claimed":
            d["impossible_causes"] = list(chk.causes)
            rows.extend(("  usual cause", cause) for cause in chk.causes)

    if args.levers:
        if args.draft_tokens < 1 or not 0 <= args.acceptance <= 1 or args.draft_cost < 0:
            raise InferlabError("--draft-tokens >= 1, --acceptance in [0, 1], --draft-cost >= 0")
        _, effects = levers(
            c,
            hw,
            args.batch,
            args.context,
            ovh,
            args.draft_tokens,
            args.acceptance,
            args.draft_cost,
        )
        d["levers"] = [
            {
                "lever": e.lever,
                "step_time_s": e.step_time_s,
                "tokens_per_s_per_user": e.tokens_per_s_per_user,
                "tokens_per_s_total": e.tokens_per_s_total,
                "per_user_speedup": e.per_user_speedup,
                "total_speedup": e.total_speedup,
                "note": e.note,
            }
            for e in effects
        ]
        rows.append(("levers, ranked", "per-user speedup / aggregate speedup"))
        rows.extend(
            (
                f"  {e.lever}",
                f"{ft(e.step_time_s)} step, x{e.per_user_speedup:.3g} per user, "
                f"x{e.total_speedup:.3g} total",
            )
            for e in effects
        )
    return d, table(rows), explain


def check_step(step_time_s: float) -> None:
    """A zero or overflowing step cannot be divided into rates: say which inputs did it."""
    if not (math.isfinite(step_time_s) and step_time_s > 0):
        raise InferlabError(
            f"the decode step comes out as {step_time_s:g} s: --weight-bytes (or --model), "
            "--bandwidth and --flops must give a positive, finite step; state real figures"
        )


def _cb_text(batch: float | None, context: int) -> str:
    if batch is None:
        return f"never at {context} tokens (one sequence's KV read outlasts its FLOPs)"
    return f"batch ~{batch:.4g}" + (f" at {context} tokens" if context else "")


def run(args: argparse.Namespace) -> int:
    d, text, explain = compute(args)
    emit(args, d, text, explain)
    return 0
