"""`inferlab floor` as sections: decode, capacity, prefill, measured, price, claims, levers.

The words of the floor: physics/ computes the numbers (decode_point, capacity,
prefill_stall, ...) and stays numeric; here each section asks it and returns its JSON
fields, its table rows and its explain lines; the command asks for the sections and concatenates
them, so a section reads (and is tested) alone. A section that does not apply
to the query returns an empty `Section`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inferlab.physics.capacity import capacity
from inferlab.physics.decode import DecodePoint, compute_bound_batch, decode_point
from inferlab.physics.roofline import ridge_point
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec
from inferlab.units import fmt_bandwidth as fbw
from inferlab.units import fmt_bytes as fb
from inferlab.units import fmt_bytes_iec
from inferlab.units import fmt_flops as ffl
from inferlab.units import fmt_pct as fpct
from inferlab.units import fmt_time as ft

if TYPE_CHECKING:  # the optional questions' physics loads when one is asked (a quick start)
    from inferlab.physics.levers import Speculation


@dataclass(frozen=True, slots=True)
class FloorQuery:
    """What `floor` was asked: the operating point and the optional questions about it."""

    cost: ModelCost
    hw: HardwareSpec
    batch: int = 1
    context: int = 0
    tp: int = 1
    overhead_s: float = 0.0
    kernels: int | None = None  # set when the overhead came from kernels x launch time
    launch_time_s: float = 4e-6
    prompt_tokens: int | None = None
    streams: int | None = None
    chunk_tokens: int | None = None
    measured_step_s: float | None = None
    usd_per_gpu_hour: float | None = None
    target_tokens_per_s: float | None = None
    claimed_tokens_per_s: float | None = None
    speculation: Speculation | None = None  # set: rank the levers


@dataclass(frozen=True, slots=True)
class Section:
    """One part of the answer: JSON fields (units in names), table rows, explain lines."""

    fields: dict[str, Any] = field(default_factory=dict)
    rows: list[tuple[str, str]] = field(default_factory=list)
    explain: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Point:
    """The decode point every section refers to, computed once."""

    q: FloorQuery
    p: DecodePoint
    peak_flops_per_s: float


def _is_stated(c: ModelCost) -> bool:
    return c.source.endswith("stated") or c.name == "stated"


def decode_explain(c: ModelCost, hw: HardwareSpec, p: DecodePoint) -> list[str]:
    peak = hw.peak_flops(c.compute_dtype)
    s = p.step
    how = (
        " (stated)"
        if _is_stated(c)
        else " (dense + head; embedding reads 1 row per sequence; MoE: experts touched)"
    )
    return [
        f"weights per step   = {fb(p.weight_bytes_per_step)}" + how,
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


def _decode_fields(pt: Point) -> dict[str, Any]:
    q, p, c, hw = pt.q, pt.p, pt.q.cost, pt.q.hw
    p1 = decode_point(c, hw, 1, q.context, q.overhead_s)
    return {
        "model": c.name,
        "model_source": c.source,
        "hardware": hw.name,
        "hardware_source": hw.source,
        "tp": q.tp,
        "weight_dtype": c.weight_dtype,
        "kv_dtype": c.kv_dtype,
        "batch": q.batch,
        "context_tokens": q.context,
        "params": c.params_total,
        "weight_bytes_resident": c.weight_bytes_resident,
        "weight_bytes_per_step": p.weight_bytes_per_step,
        "kv_bytes_per_token": c.kv_bytes_per_token,
        "kv_bytes_per_sequence": p.kv_bytes_per_sequence,
        "kv_bytes_total": p.kv_bytes_total,
        "bytes_per_step": p.bytes_per_step,
        "flops_per_step": p.flops_per_step,
        "bandwidth_bytes_per_s": hw.bandwidth_bytes_per_s,
        "peak_flops_per_s": pt.peak_flops_per_s,
        "memory_time_s": p.step.memory_time_s,
        "compute_time_s": p.step.compute_time_s,
        "overhead_s": q.overhead_s,
        "overhead_share": p.step.overhead_share,
        "decode_step_time_s": p.step_time_s,
        "decode_bound": p.step.bound,
        "tokens_per_s_per_user": p.tokens_per_s_per_user,
        "tokens_per_s_total": p.tokens_per_s_total,
        "batch1_step_time_s": p1.step_time_s,
        "slowdown_vs_batch1": p.step_time_s / p1.step_time_s,
        "total_speedup_vs_batch1": p.tokens_per_s_total / p1.tokens_per_s_total,
        "ridge_flops_per_byte": ridge_point(pt.peak_flops_per_s, hw.bandwidth_bytes_per_s),
        "intensity_flops_per_byte": p.step.intensity_flops_per_byte,
        "compute_bound_batch": compute_bound_batch(c, hw, q.context),
        "compute_bound_batch_without_kv": compute_bound_batch(c, hw, 0),
    }


def _cb_text(batch: float | None, context: int) -> str:
    if batch is None:
        return f"never at {context} tokens (one sequence's KV read outlasts its FLOPs)"
    return f"batch ~{batch:.4g}" + (f" at {context} tokens" if context else "")


def decode_section(pt: Point) -> Section:
    q, p, c, hw = pt.q, pt.p, pt.q.cost, pt.q.hw
    d = _decode_fields(pt)
    rows = [
        ("model", f"{c.name} ({c.weight_dtype} weights, {c.kv_dtype} KV)"),
        ("hardware", f"{hw.name}" + (f" (TP {q.tp})" if q.tp > 1 else "")),
        ("weights resident", fb(c.weight_bytes_resident)),
        ("weights per step", fb(p.weight_bytes_per_step)),
        ("KV per token", fmt_bytes_iec(c.kv_bytes_per_token)),
        ("KV per step", f"{fb(p.kv_bytes_total)} ({q.batch} x {q.context} tokens)"),
        ("bytes per step", fb(p.bytes_per_step)),
        ("decode step", f"{ft(p.step_time_s)} ({p.step.bound}-bound)"),
        ("per-user rate", f"{p.tokens_per_s_per_user:.4g} tok/s"),
        ("aggregate rate", f"{p.tokens_per_s_total:.4g} tok/s"),
    ]
    if q.batch > 1:
        rows.append(
            (
                "vs batch 1",
                f"each user {d['slowdown_vs_batch1']:.3g}x slower, "
                f"total {d['total_speedup_vs_batch1']:.3g}x (not {q.batch}x)",
            )
        )
    ovh, ridge = q.overhead_s, d["ridge_flops_per_byte"]
    if ovh:
        rows.append(("per-step overhead", f"{ft(ovh)} = {fpct(p.step.overhead_share)} of the step"))
    rows.append(
        ("ridge point", f"{ridge:.4g} FLOP/B; this step {p.step.intensity_flops_per_byte:.3g}")
    )
    cb, cb0 = d["compute_bound_batch"], d["compute_bound_batch_without_kv"]
    rows.append(("compute-bound at", _cb_text(cb, q.context) + f"; without KV: {_cb_text(cb0, 0)}"))
    explain = decode_explain(c, hw, p)
    explain.append(
        f"ridge point        = {ffl(pt.peak_flops_per_s)} / {fbw(hw.bandwidth_bytes_per_s)} "
        f"= {ridge:.4g} FLOP/B"
    )
    if ovh and q.kernels:
        explain.append(
            f"launch overhead    = {q.kernels} kernels x {ft(q.launch_time_s)} = {ft(ovh)}"
        )
    return Section(d, rows, explain)


def capacity_section(pt: Point) -> Section:
    q, c, hw = pt.q, pt.q.cost, pt.q.hw
    if not (hw.memory_bytes > 0 and c.kv_bytes_per_token > 0 and q.context > 0):
        return Section()
    cap = capacity(c, hw, q.context)
    return Section(
        {"max_batch": cap.max_batch},
        [("max batch", f"{cap.max_batch} at {q.context} tokens in {fb(hw.memory_bytes)}")],
        [
            f"max batch          = floor(({fb(hw.memory_bytes)} - {fb(cap.weight_bytes)}) / "
            f"{fb(cap.kv_bytes_per_sequence)}) = {cap.max_batch}"
        ],
    )


def prefill_section(pt: Point) -> Section:
    q, hw = pt.q, pt.q.hw
    if not q.prompt_tokens:
        return Section()
    from inferlab.physics.prefill import prefill_stall

    streams = q.streams or q.batch
    pf = prefill_stall(
        q.cost, hw, q.prompt_tokens, streams, q.context, q.chunk_tokens, q.overhead_s
    )
    d: dict[str, Any] = {
        "prompt_tokens": q.prompt_tokens,
        "streams": streams,
        "prefill_flops": pf.step.flops,
        "prefill_time_s": pf.prefill_time_s,
        "prefill_bound": pf.step.bound,
        "stall_steps": pf.stall_steps,
        "stall_time_s": pf.prefill_time_s,
        "max_gap_s": pf.max_gap_s,
    }
    t = ft(pf.prefill_time_s)
    rows = [
        (
            "prefill",
            f"{q.prompt_tokens} tokens: {t} ({pf.step.bound}-bound)"
            f" = {pf.stall_steps:.3g} decode steps",
        ),
        ("stall", f"each of {streams} streams freezes {t} (~{pf.stall_steps:.3g} steps)"),
    ]
    explain = [
        f"prefill FLOPs      = {pf.step.flops:.4g} FLOP (2 x params x tokens + attention)",
        f"prefill time       = max({pf.step.flops:.4g} / {ffl(pt.peak_flops_per_s)}, "
        f"{fb(pf.step.bytes)} / {fbw(hw.bandwidth_bytes_per_s)}) = {t}",
        f"stall              = {t} / {ft(pf.decode.step_time_s)} "
        f"= {pf.stall_steps:.3g} decode steps",
    ]
    if pf.chunk_step is not None:
        d.update(
            chunk_tokens=q.chunk_tokens,
            chunks=pf.chunks,
            chunk_step_time_s=pf.chunk_step.step_time_s,
        )
        rows.append(
            (
                "chunked prefill",
                f"{pf.chunks} chunks of {q.chunk_tokens}: longest gap "
                f"{ft(pf.chunk_step.step_time_s)} instead of {ft(pf.max_gap_without_chunks_s)}",
            )
        )
    return Section(d, rows, explain)


def measured_section(pt: Point) -> Section:
    q, p, hw, peak = pt.q, pt.p, pt.q.hw, pt.peak_flops_per_s
    if not q.measured_step_s:
        return Section()
    bw = hw.bandwidth_bytes_per_s
    from inferlab.physics.measured import utilisation  # only with --measured

    u = utilisation(p.bytes_per_step, p.flops_per_step, q.measured_step_s, bw, peak, p.step_time_s)
    d: dict[str, Any] = {
        "measured_step_time_s": u.measured_step_time_s,
        "achieved_bandwidth_bytes_per_s": u.achieved_bandwidth_bytes_per_s,
        "achieved_flops_per_s": u.achieved_flops_per_s,
        "mbu": u.mbu,
        "mfu": u.mfu,
        "floor_over_measured": u.floor_over_measured,
    }
    achieved_bw, achieved_fl = fbw(u.achieved_bandwidth_bytes_per_s), ffl(u.achieved_flops_per_s)
    rows = [
        ("achieved bandwidth", f"{achieved_bw} = MBU {fpct(u.mbu)}"),
        ("achieved FLOPS", f"{achieved_fl} = MFU {fpct(u.mfu)}"),
    ]
    explain = [
        f"achieved bandwidth = {fb(p.bytes_per_step)} / {ft(q.measured_step_s)} = {achieved_bw}",
        f"MBU                = {achieved_bw} / {fbw(bw)} = {fpct(u.mbu)}",
        f"MFU                = {achieved_fl} / {ffl(peak)} = {fpct(u.mfu)}",
    ]
    if u.floor_over_measured > 1.001:
        d["measured_below_floor"] = True
        rows.append(
            (
                "IMPOSSIBLE",
                "measured step is faster than the floor: check the clock "
                "(synchronize before stopping it) and the token count",
            )
        )
    return Section(d, rows, explain)


def price_section(pt: Point) -> Section:
    q, p = pt.q, pt.p
    if q.usd_per_gpu_hour is None:
        return Section()
    from inferlab.physics.price import price_per_million

    usd_h = q.usd_per_gpu_hour
    price = price_per_million(usd_h, p.tokens_per_s_total, q.tp)
    usd = price.usd_per_million_tokens
    return Section(
        {"usd_per_gpu_hour": usd_h, "usd_per_million_tokens": usd},
        [
            (
                "price at the floor",
                f"${usd:.4g} per million tokens "
                f"({q.tp} GPU(s) at ${usd_h:g}/h, {p.tokens_per_s_total:.4g} tok/s)",
            )
        ],
        [
            f"price              = ${usd_h:g}/h x {q.tp} / "
            f"({p.tokens_per_s_total:.4g} tok/s x 3600 s) x 1e6 = ${usd:.4g}"
        ],
    )


def claims_section(pt: Point) -> Section:
    """A target (can it be promised?) and a claim (can it be true?) against the ceiling."""
    q, ceiling = pt.q, pt.p.tokens_per_s_per_user
    d: dict[str, Any] = {}
    rows: list[tuple[str, str]] = []
    for label, rate in (("target", q.target_tokens_per_s), ("claimed", q.claimed_tokens_per_s)):
        if rate is None:
            continue
        from inferlab.physics.measured import check_claim  # only with --claim

        chk = check_claim(rate, ceiling)
        d[f"{label}_tokens_per_s"] = rate
        d[f"{label}_possible"] = chk.possible
        if chk.possible:
            verdict = "within the ceiling"
        elif label == "target":
            verdict = "cannot be promised: above the physical ceiling"
        else:
            verdict = "IMPOSSIBLE: above the physical ceiling"
        rows.append((f"{label} {rate:g} tok/s", f"{verdict} of {ceiling:.4g} tok/s per user"))
        if not chk.possible and label == "claimed":
            d["impossible_causes"] = list(chk.causes)
            rows.extend(("  usual cause", cause) for cause in chk.causes)
    return Section(d, rows)


def levers_section(pt: Point) -> Section:
    q = pt.q
    if q.speculation is None:
        return Section()
    from inferlab.physics.levers import levers

    _, effects = levers(q.cost, q.hw, q.batch, q.context, q.overhead_s, q.speculation)
    d = {
        "levers": [
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
    }
    rows = [("levers, ranked", "per-user speedup / aggregate speedup")]
    rows.extend(
        (
            f"  {e.lever}",
            f"{ft(e.step_time_s)} step, x{e.per_user_speedup:.3g} per user, "
            f"x{e.total_speedup:.3g} total",
        )
        for e in effects
    )
    return Section(d, rows)


SECTIONS: tuple[Callable[[Point], Section], ...] = (
    decode_section,
    capacity_section,
    prefill_section,
    measured_section,
    price_section,
    claims_section,
    levers_section,
)


def floor_sections(q: FloorQuery) -> list[Section]:
    """Every section, in the order the command prints them."""
    p = decode_point(q.cost, q.hw, q.batch, q.context, q.overhead_s)
    pt = Point(q, p, q.hw.peak_flops(q.cost.compute_dtype))
    return [section(pt) for section in SECTIONS]
