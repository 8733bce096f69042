"""Card kinds where memory binds: the decode ceiling, claims, MBU, GPU-util, batching, max batch.

Every expected answer is a physics/ function of the card's stated inputs (the
ones `floor` and `capacity` call); a usual mistake is the same function fed
the mistaken input (one GPU's bandwidth, one user's KV, ...).
"""

from __future__ import annotations

import random

from inferlab.drill.cards import Alternate, Card, Inputs, Quantity, mistakes
from inferlab.drill.draw import Setup, Want, draw_setup, round_sig
from inferlab.drill.numbers import kib, ms, say, setup_numbers, size
from inferlab.physics.capacity import capacity
from inferlab.physics.decode import decode_point
from inferlab.physics.measured import check_claim, utilisation
from inferlab.physics.roofline import roofline
from inferlab.units import fmt_bandwidth

CONTEXTS = (0, 0, 1000, 2048, 4096, 8192, 32768)


def setup_inputs(seed: int, s: Setup, **extra: int | float | str | None) -> Inputs:
    return Inputs(
        seed=seed,
        model=s.model,
        weight_dtype=s.weight_dtype,
        weight_bytes=s.weight_bytes,
        params=s.params,
        kv_bytes_per_token=s.kv_bytes_per_token,
        hardware=s.hardware,
        bandwidth_bytes_per_s=s.bandwidth_bytes_per_s,
        peak_flops_per_s=s.peak_flops_per_s,
        memory_bytes=s.memory_bytes,
        tp=s.tp,
        **extra,  # type: ignore[arg-type]
    )


def fits(s: Setup, context: int, batch: int = 1) -> bool:
    return capacity(s.cost(), s.devices(), context).max_batch >= batch


def _one_gpu_step_s(s: Setup, batch: int, context: int) -> float | None:
    """Mistake: one device's bandwidth under TP (the weights are split, bandwidths add)."""
    if s.tp == 1:
        return None
    return decode_point(s.cost(), s.devices(1), batch, context).step_time_s


def ceiling(rng: random.Random, seed: int) -> Card:
    s = draw_setup(rng)
    ctx = rng.choice(CONTEXTS)
    ctx = ctx if fits(s, ctx) else 0
    cost, hw = s.cost(), s.devices()
    p = decode_point(cost, hw, 1, ctx)
    one = _one_gpu_step_s(s, 1, ctx)
    on_flops = p.bytes_per_step / hw.peak_flops(cost.compute_dtype)
    no_kv = decode_point(cost, hw, 1, 0).step_time_s if ctx else None
    return Card(
        kind="ceiling",
        inputs=setup_inputs(seed, s, batch=1, context_tokens=ctx),
        answer=Quantity(p.step_time_s * 1e3, "ms"),
        alternates=(Alternate(Quantity(p.tokens_per_s_per_user, "tok/s"), inverse=True),),
        mistakes=mistakes(
            p.step_time_s * 1e3,
            ("one-gpu-bandwidth", one and one * 1e3),
            ("flops-not-bandwidth", on_flops * 1e3),
            ("kv-forgotten", no_kv and no_kv * 1e3),
        ),
        verb_argv=("floor", *s.argv(), "--context", str(ctx)),
        numbers={
            **setup_numbers(s),
            "context": f"{ctx:,}",
            "kv_seq": size(p.kv_bytes_per_sequence),
            "bytes": size(p.bytes_per_step),
            "step": ms(p.step_time_s),
            "rate": say(p.tokens_per_s_per_user),
        },
    )


def claim(rng: random.Random, seed: int) -> Card:
    s = draw_setup(rng)
    cost, hw = s.cost(), s.devices()
    p = decode_point(cost, hw, 1, 0)
    ceiling_tps = p.tokens_per_s_per_user
    claimed = round_sig(ceiling_tps * rng.choice((0.5, 0.7, 1.5, 2.0, 3.0, 10.0)), 2)
    chk = check_claim(claimed, ceiling_tps)
    one = _one_gpu_step_s(s, 1, 0)
    on_flops = p.bytes_per_step / hw.peak_flops(cost.compute_dtype)
    return Card(
        kind="claim",
        inputs=setup_inputs(seed, s, batch=1, context_tokens=0, claimed_tokens_per_s=claimed),
        answer=Quantity(ceiling_tps, "tok/s"),
        alternates=(Alternate(Quantity(p.step_time_s * 1e3, "ms"), inverse=True),),
        mistakes=mistakes(
            ceiling_tps,
            ("claim-taken", claimed),
            ("one-gpu-bandwidth", one and 1 / one),
            ("flops-not-bandwidth", 1 / on_flops),
        ),
        verb_argv=("floor", *s.argv(), "--claimed-tokens-per-s", f"{claimed:g}"),
        numbers={
            **setup_numbers(s),
            "claimed": say(claimed),
            "step": ms(p.step_time_s),
            "rate": say(ceiling_tps),
        },
        verdict="claim-possible" if chk.possible else "claim-impossible",
    )


def _measured(rng: random.Random, floor_s: float, lo: float, hi: float) -> float:
    """A measured step time (2 significant digits, in ms) for an MBU between lo and hi."""
    return round_sig(floor_s / rng.uniform(lo, hi) * 1e3, 2) / 1e3


def _mbu_card(name: str, seed: int, s: Setup, measured_s: float, **extra: float) -> Card:
    cost, hw = s.cost(), s.devices()
    p = decode_point(cost, hw, 1, 0)
    peak = hw.peak_flops(cost.compute_dtype)
    u = utilisation(
        p.bytes_per_step,
        p.flops_per_step,
        measured_s,
        hw.bandwidth_bytes_per_s,
        peak,
        p.step_time_s,
    )
    one = (
        utilisation(
            p.bytes_per_step, p.flops_per_step, measured_s, s.bandwidth_bytes_per_s, peak, 0.0
        ).mbu
        if s.tp > 1
        else None
    )
    extra_mistakes = [("gpu-util-as-usage", 100.0)] if "gpu_util" in extra else []
    if "power_share" in extra:
        extra_mistakes.append(("power-as-usage", extra["power_share"] * 100))
    return Card(
        kind=name,
        inputs=setup_inputs(
            seed,
            s,
            batch=1,
            context_tokens=0,
            measured_step_time_s=measured_s,
            gpu_util=extra.get("gpu_util"),
            power_share=extra.get("power_share"),
        ),
        answer=Quantity(u.mbu * 100, "%"),
        alternates=(
            Alternate(Quantity(u.achieved_bandwidth_bytes_per_s / 1e12, "TB/s"), inverse=False),
        ),
        mistakes=mistakes(
            u.mbu * 100,
            ("one-gpu-bandwidth", one and one * 100),
            ("measured-over-floor", 100 / u.mbu),
            *extra_mistakes,
        ),
        verb_argv=("floor", *s.argv(), "--measured-step", f"{measured_s * 1e3:g}ms"),
        numbers={
            **setup_numbers(s),
            "measured": ms(measured_s),
            "step": ms(p.step_time_s),
            "achieved": fmt_bandwidth(u.achieved_bandwidth_bytes_per_s, 3),
            "mbu": say(u.mbu * 100),
            "mfu": say(u.mfu * 100),
            "power": say(extra.get("power_share", 0.0) * 100),
        },
        verdict="healthy" if u.mbu >= 0.6 else "room-left",
    )


def mbu(rng: random.Random, seed: int) -> Card:
    s = draw_setup(rng, Want(min_tp=rng.choice((1, 2, 2, 4))))
    floor_s = decode_point(s.cost(), s.devices(), 1, 0).step_time_s
    return _mbu_card("mbu", seed, s, _measured(rng, floor_s, 0.3, 0.9))


def gpu_util(rng: random.Random, seed: int) -> Card:
    s = draw_setup(rng, Want(max_tp=1))
    floor_s = decode_point(s.cost(), s.devices(), 1, 0).step_time_s
    share = rng.choice((0.4, 0.45, 0.5, 0.55))
    measured = _measured(rng, floor_s, 0.45, 0.75)
    return _mbu_card("gpu-util", seed, s, measured, gpu_util=1.0, power_share=share)


def batching(rng: random.Random, seed: int) -> Card:
    while True:
        s = draw_setup(rng)
        ctx = rng.choice((500, 1000, 2000, 4096, 8192))
        fit = [b for b in (4, 8, 16, 32, 64, 128) if fits(s, ctx, b)]
        if fit:
            break
    b = rng.choice(fit)
    target = rng.choice(("per_user", "total"))
    cost, hw = s.cost(), s.devices()
    p, p1 = decode_point(cost, hw, b, ctx), decode_point(cost, hw, 1, ctx)
    peak = hw.peak_flops(cost.compute_dtype)
    one_kv = roofline(
        p.weight_bytes_per_step + p.kv_bytes_per_sequence,
        p.flops_per_step,
        hw.bandwidth_bytes_per_s,
        peak,
    ).step_time_s
    per_user = target == "per_user"
    value = p.tokens_per_s_per_user if per_user else p.tokens_per_s_total
    return Card(
        kind="batching",
        inputs=setup_inputs(seed, s, target=target, batch=b, context_tokens=ctx),
        answer=Quantity(value, "tok/s"),
        alternates=(
            (Alternate(Quantity(p.step_time_s * 1e3, "ms"), inverse=True),) if per_user else ()
        ),
        mistakes=mistakes(
            value,
            ("one-users-kv", 1 / one_kv if per_user else b / one_kv),
            (
                ("n-times-slower", p1.tokens_per_s_per_user / b)
                if per_user
                else ("n-times-faster", p1.tokens_per_s_total * b)
            ),
            (
                ("total-not-per-user", p.tokens_per_s_total)
                if per_user
                else ("per-user-not-total", p.tokens_per_s_per_user)
            ),
        ),
        verb_argv=("floor", *s.argv(), "--batch", str(b), "--context", str(ctx)),
        numbers={
            **setup_numbers(s),
            "batch": str(b),
            "context": f"{ctx:,}",
            "kv_total": size(p.kv_bytes_total),
            "bytes": size(p.bytes_per_step),
            "step": ms(p.step_time_s),
            "step1": ms(p1.step_time_s),
            "rate1": say(p1.tokens_per_s_per_user),
            "per_user": say(p.tokens_per_s_per_user),
            "total": say(p.tokens_per_s_total),
            "slowdown": say(p.step_time_s / p1.step_time_s),
            "speedup": say(p.tokens_per_s_total / p1.tokens_per_s_total),
        },
    )


def max_batch(rng: random.Random, seed: int) -> Card:
    while True:
        s = draw_setup(rng, Want(weight_share=0.6))
        ctx = rng.choice((1000, 2048, 4096, 8192, 16384, 32768))
        cap = capacity(s.cost(), s.devices(), ctx)
        # Weights that take a fifth of memory or more: the card is about putting them first.
        if cap.max_batch >= 2 and cap.weight_bytes >= 0.2 * cap.memory_bytes:
            break
    one = capacity(s.cost(), s.devices(1), ctx).max_batch if s.tp > 1 else None
    return Card(
        kind="max-batch",
        inputs=setup_inputs(seed, s, context_tokens=ctx),
        answer=Quantity(float(cap.max_batch), "sequences"),
        mistakes=mistakes(
            cap.max_batch,
            ("weights-forgotten", cap.memory_bytes // cap.kv_bytes_per_sequence),
            ("one-gpu-memory", one),
        ),
        verb_argv=("capacity", *s.argv(), "--context", str(ctx)),
        numbers={
            **setup_numbers(s),
            "context": f"{ctx:,}",
            "free": size(cap.free_for_kv_bytes),
            "kv_seq": size(cap.kv_bytes_per_sequence),
            "kv_token": kib(s.kv_bytes_per_token),
            "max_batch": str(cap.max_batch),
        },
    )
