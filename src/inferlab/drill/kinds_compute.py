"""Card kinds about compute and money: prefill, ridge point, compute-bound crossover, $, Amdahl.

As in kinds_memory: answers come from the physics functions `floor`, `cost`
and `amdahl` call; a usual mistake is the same function with the mistaken input.
"""

from __future__ import annotations

import math
import random

from inferlab.drill.cards import Card, Inputs, Quantity, mistakes
from inferlab.drill.draw import Want, draw_setup, round_sig
from inferlab.drill.kinds_memory import fits, setup_inputs
from inferlab.drill.numbers import ms, say, setup_numbers, size
from inferlab.physics.amdahl import amdahl
from inferlab.physics.decode import compute_bound_batch, decode_point
from inferlab.physics.prefill import prefill_stall
from inferlab.physics.price import price_per_million
from inferlab.physics.roofline import ridge_point
from inferlab.specs.cost import ModelCost


def prefill(rng: random.Random, seed: int) -> Card:
    s = draw_setup(rng)
    target = rng.choice(("time", "stall"))
    prompt = rng.choice((500, 1000, 2000, 4000, 8000, 16000))
    streams = rng.choice((8, 16, 30, 32, 64)) if target == "stall" else 1
    cost, hw = s.cost(), s.devices()
    pf = prefill_stall(cost, hw, prompt, streams, 0)
    peak = hw.peak_flops(cost.compute_dtype)
    bytes_over_flops_s = cost.weight_bytes_per_step(prompt) / peak
    if target == "time":
        answer = Quantity(pf.prefill_time_s * 1e3, "ms")
        wrong = mistakes(
            answer.value,
            ("bytes-over-flops", bytes_over_flops_s * 1e3),
            ("prefill-as-decode-step", pf.decode.step_time_s * 1e3),
        )
    else:
        answer = Quantity(pf.stall_steps, "steps")
        wrong = mistakes(
            answer.value,
            ("bytes-over-flops", bytes_over_flops_s / pf.decode.step_time_s),
            ("prefill-as-decode-step", 1.0),
        )
    return Card(
        kind="prefill",
        inputs=setup_inputs(
            seed, s, target=target, prompt_tokens=prompt, streams=streams, context_tokens=0
        ),
        answer=answer,
        mistakes=wrong,
        verb_argv=("floor", *s.argv(), "--prompt", str(prompt), "--streams", str(streams)),
        numbers={
            **setup_numbers(s),
            "prompt": f"{prompt:,}",
            "streams": str(streams),
            "prefill_flops": f"{pf.step.flops:.2e}".replace("e+", "e"),
            "prefill": ms(pf.prefill_time_s),
            "bound": pf.step.bound,
            "step": ms(pf.decode.step_time_s),
            "stall": say(pf.stall_steps),
        },
    )


def ridge(rng: random.Random, seed: int) -> Card:
    s = draw_setup(rng, Want(max_tp=1 if rng.random() < 0.7 else 8))
    hw = s.devices()
    peak = hw.peak_flops(s.cost().compute_dtype)
    r = ridge_point(peak, hw.bandwidth_bytes_per_s)
    return Card(
        kind="ridge",
        inputs=setup_inputs(seed, s),
        answer=Quantity(r, "FLOP/B"),
        mistakes=mistakes(
            r,
            ("inverted", 1 / r),
            ("thousand-off", r * 1000),
            ("thousand-off", r / 1000),
        ),
        verb_argv=("floor", *s.argv()),
        numbers={**setup_numbers(s), "ridge": say(r)},
    )


def crossover(rng: random.Random, seed: int) -> Card:
    while True:
        s = draw_setup(rng)
        target = rng.choice(("without_kv", "with_kv"))
        ctx = rng.choice((256, 512, 1000, 2048)) if target == "with_kv" else 0
        cost, hw = s.cost(), s.devices()
        cb = compute_bound_batch(cost, hw, ctx)
        if cb is not None:
            break
    cb0 = compute_bound_batch(cost, hw, 0)
    # Mistake: 1 FLOP per parameter instead of 2 (a multiply and an add).
    half = ModelCost.stated(s.weight_bytes, s.kv_bytes_per_token, s.params / 2, s.weight_dtype)
    peak = hw.peak_flops(cost.compute_dtype)
    r = ridge_point(peak, hw.bandwidth_bytes_per_s)
    return Card(
        kind="crossover",
        inputs=setup_inputs(seed, s, target=target, context_tokens=ctx),
        answer=Quantity(cb, "sequences"),
        mistakes=mistakes(
            cb,
            ("kv-shared", cb0),
            ("ridge-as-batch", r),
            ("one-flop-per-parameter", compute_bound_batch(half, hw, ctx)),
        ),
        verb_argv=("floor", *s.argv(), "--context", str(ctx)),
        numbers={
            **setup_numbers(s),
            "context": f"{ctx:,}",
            "ridge": say(r),
            "bytes_per_param": f"{s.weight_bytes / s.params:.3g}",
            "batch": say(cb),
            "batch0": say(cb0 or math.inf),
            "kv_seq": size(cost.kv_bytes(ctx)),
        },
    )


def cost(rng: random.Random, seed: int) -> Card:
    while True:
        s = draw_setup(rng)
        ctx = rng.choice((0, 1000, 4096))
        fit = [b for b in (1, 1, 8, 32, 64) if b == 1 or fits(s, ctx, b)]
        b = rng.choice(fit)
        if fits(s, ctx, b):
            break
    usd = rng.choice((0.8, 1.2, 2.0, 2.5, 3.0, 4.0, 6.0))
    rate = round_sig(decode_point(s.cost(), s.devices(), b, ctx).tokens_per_s_total, 2)
    p = price_per_million(usd, rate, s.tp)
    hours = 1e6 / p.tokens_per_hour
    answer = p.usd_per_million_tokens
    return Card(
        kind="cost",
        inputs=setup_inputs(
            seed, s, batch=b, context_tokens=ctx, usd_per_gpu_hour=usd, tokens_per_s=rate, gpus=s.tp
        ),
        answer=Quantity(answer, "$"),
        mistakes=mistakes(
            answer,
            ("divided-not-multiplied", usd * s.tp / hours),
            ("seconds-for-hours", answer * 3600),
            ("power-of-ten", answer * 10),
            ("power-of-ten", answer / 10),
            ("one-gpu-priced", answer / s.tp if s.tp > 1 else None),
        ),
        verb_argv=(
            "cost",
            "--gpu-hour",
            f"{usd:g}",
            "--tokens-per-s",
            f"{rate:g}",
            "--gpus",
            str(s.tp),
        ),
        numbers={
            **setup_numbers(s),
            "usd": f"{usd:g}",
            "rate": say(rate),
            "batch": str(b),
            "per_hour": say(p.tokens_per_hour),
            "hours": say(hours),
            "price": say(answer),
        },
    )


def _parts(rng: random.Random) -> list[tuple[float, float]]:
    while True:
        n = rng.choice((1, 2, 2, 3))
        fractions = rng.sample(range(1, 13), n)  # multiples of 5 %
        if sum(fractions) <= 18:
            return [(f * 0.05, rng.choice((1.5, 2.0, 3.0, 4.0, 5.0, 10.0))) for f in fractions]


def amdahl_card(rng: random.Random, seed: int) -> Card:
    parts = [(round(f, 2), sp) for f, sp in _parts(rng)]
    a = amdahl(parts)
    speedups = [sp for _, sp in parts]
    product = math.prod(speedups)
    wrong = (
        (("part-speedup-as-whole", product),)
        if len(parts) == 1
        else (("speedups-multiplied", product), ("speedups-added", sum(speedups)))
    )
    terms = " + ".join(f"{f:g}/{sp:g}" for f, sp in parts)
    return Card(
        kind="amdahl",
        inputs=Inputs(seed=seed, parts=tuple(parts)),
        answer=Quantity(a.speedup, "x"),
        mistakes=mistakes(a.speedup, *wrong),
        verb_argv=("amdahl", *(f"{f:g}:{sp:g}" for f, sp in parts)),
        numbers={
            "parts_en": ", ".join(
                f"{f * 100:.0f}% of the step made {sp:g}x faster" for f, sp in parts
            ),
            "parts_vi": ", ".join(
                f"{f * 100:.0f}% của bước nhanh hơn {sp:g} lần" for f, sp in parts
            ),
            "untouched": f"{a.untouched_fraction:.2g}",
            "terms": terms,
            "new_time": say(a.new_time),
            "speedup": say(a.speedup),
            "ceiling": say(a.ceiling),
        },
    )
