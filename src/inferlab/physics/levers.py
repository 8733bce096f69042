"""Levers: what each change does to the step time and tok/s at one operating point, ranked.

Every lever moves fewer bytes, shares them better, gets more tokens per
weight read, or removes fixed per-step overhead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inferlab.physics.decode import DecodePoint, decode_point
from inferlab.physics.roofline import roofline
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec


@dataclass(frozen=True, slots=True)
class LeverEffect:
    lever: str
    step_time_s: float
    tokens_per_s_per_user: float
    tokens_per_s_total: float
    per_user_speedup: float  # vs the baseline point
    total_speedup: float
    note: str


def expected_tokens_per_verify(draft_tokens: int, acceptance: float) -> float:
    """Speculative decoding: tokens gained per verification step, i.i.d. acceptance a.

    E = (1 - a^(k+1)) / (1 - a): the accepted prefix plus the target's own token.
    """
    if acceptance >= 1.0:
        return draft_tokens + 1.0
    return (1.0 - acceptance ** (draft_tokens + 1)) / (1.0 - acceptance)


def _effect(
    name: str,
    base: DecodePoint,
    step_s: float,
    tokens_per_step_per_user: float,
    batch: int,
    note: str,
) -> LeverEffect:
    per_user = tokens_per_step_per_user / step_s
    total = per_user * batch
    return LeverEffect(
        name,
        step_s,
        per_user,
        total,
        per_user / base.tokens_per_s_per_user,
        total / base.tokens_per_s_total,
        note,
    )


@dataclass(frozen=True, slots=True)
class Speculation:
    """Speculative decoding's knobs: k drafted tokens, i.i.d. acceptance, a draft step's cost.

    `draft_cost_ratio`: one draft-model step as a fraction of a target step
    (a draft model ~20x smaller reads ~1/20 of the bytes).
    """

    draft_tokens: int = 4
    acceptance: float = 0.7
    draft_cost_ratio: float = 0.05


def levers(
    cost: ModelCost,
    hw: HardwareSpec,
    batch: int,
    context: int,
    overhead_s: float = 0.0,
    spec: Speculation = Speculation(),
) -> tuple[DecodePoint, list[LeverEffect]]:
    """Baseline point and each lever's effect, best per-user speedup first."""
    base = decode_point(cost, hw, batch, context, overhead_s)
    out = _fewer_bytes(cost, hw, base, overhead_s)
    p = decode_point(cost, hw, 2 * batch, context, overhead_s)
    out.append(
        _effect(
            f"double the batch ({batch} -> {2 * batch})",
            base,
            p.step_time_s,
            1,
            2 * batch,
            "shares each weight read with twice the users; needs KV memory",
        )
    )
    out.append(_speculative(cost, hw, base, overhead_s, spec))
    if overhead_s > 0:
        out.append(
            _effect(
                "CUDA graphs / fusion (remove launch overhead)",
                base,
                # the roofline part alone (subtracting would cancel to 0 when overhead dominates)
                max(base.step.memory_time_s, base.step.compute_time_s),
                1,
                batch,
                f"removes {overhead_s * 1e3:.3g} ms of launches per step",
            )
        )
    out.sort(key=lambda e: e.per_user_speedup, reverse=True)
    return base, out


def _fewer_bytes(
    cost: ModelCost, hw: HardwareSpec, base: DecodePoint, overhead_s: float
) -> list[LeverEffect]:
    """Halve the weight bytes, or the KV bytes, at the same batch and context."""
    batch, context = base.batch, base.context
    half_w = replace(
        cost,
        dense_bytes_per_step=cost.dense_bytes_per_step / 2,
        embedding_row_bytes=cost.embedding_row_bytes / 2,
        expert_bytes_each=cost.expert_bytes_each / 2,
    )
    pw = decode_point(half_w, hw, batch, context, overhead_s)
    half_kv = replace(cost, kv_bytes_per_token=cost.kv_bytes_per_token / 2)
    pk = decode_point(half_kv, hw, batch, context, overhead_s)
    return [
        _effect(
            "halve weight bytes (8-bit/4-bit weights)",
            base,
            pw.step_time_s,
            1,
            batch,
            f"weights {base.weight_bytes_per_step:.3g} -> {pw.weight_bytes_per_step:.3g} B "
            "per step",
        ),
        _effect(
            "halve KV bytes (fp8 KV cache, fewer KV heads)",
            base,
            pk.step_time_s,
            1,
            batch,
            f"KV {base.kv_bytes_total:.3g} -> {pk.kv_bytes_total:.3g} B per step",
        ),
    ]


def _speculative(
    cost: ModelCost, hw: HardwareSpec, base: DecodePoint, overhead_s: float, spec: Speculation
) -> LeverEffect:
    k = spec.draft_tokens
    e_tok = expected_tokens_per_verify(k, spec.acceptance)
    # The verify step reads the same bytes as one decode step but checks k+1 tokens.
    flops = (k + 1) * base.flops_per_step
    v = roofline(
        base.bytes_per_step,
        flops,
        hw.bandwidth_bytes_per_s,
        hw.peak_flops(cost.compute_dtype),
        overhead_s,
    )
    step = v.step_time_s + k * spec.draft_cost_ratio * base.step_time_s
    return _effect(
        f"speculative decoding (k={k}, acceptance {spec.acceptance:g})",
        base,
        step,
        e_tok,
        base.batch,
        f"{e_tok:.2f} tokens per verify step of {step * 1e3:.3g} ms "
        f"(draft step = {spec.draft_cost_ratio:g} x target step)",
    )
