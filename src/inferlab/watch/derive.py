"""The live quantities over a window of scrapes, each with its basis — or unknown, with why.

MBU = bytes per step at the running batch and context (weights once + every
running sequence's KV) x engine steps/s / peak bandwidth. MFU = (FLOPs per
generated token x generated tok/s + prefill FLOPs per prompt token x prompt
tok/s) / peak FLOPS. The floor step is the roofline at the same batch and
context; all of it from physics/ (decode_point, roofline, utilisation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from inferlab.engines.result import EngineBench
from inferlab.metrics.verdict import engine_growth, engine_step
from inferlab.physics.decode import decode_point
from inferlab.physics.floor import Floor
from inferlab.physics.measured import utilisation
from inferlab.physics.roofline import StepTime, roofline
from inferlab.servermetrics.snapshot import Delta, Snapshot, delta
from inferlab.units import fmt_bytes
from inferlab.vocab import Bound


@dataclass(frozen=True, slots=True)
class Quantity:
    """A value with how it was obtained; value None means unknown and basis says why."""

    value: float | None
    basis: str

    @property
    def known(self) -> bool:
        return self.value is not None

    def to_json(self) -> dict[str, Any]:
        v = self.value
        return {"value": v if v is None or math.isfinite(v) else None, "basis": self.basis}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Quantity:
        return cls(d["value"], d["basis"])


def unknown(reason: str) -> Quantity:
    return Quantity(None, "unknown: " + reason)


@dataclass(frozen=True, slots=True)
class EngineFloor(Floor):
    """A floor with the engine alone beside it (engine-bench): watch's reading then splits
    kernels from serving, as the report does."""

    engine: EngineBench | None = None

    @classmethod
    def of(cls, floor: Floor, engine: EngineBench | None) -> Floor:
        if engine is None:
            return floor
        return cls(floor.cost, floor.hardware, floor.devices, floor.context_tokens, engine)


@dataclass(frozen=True, slots=True)
class Live:
    """Everything `watch` shows for one instant, over the window that ends there."""

    window_s: float
    samples: int
    generated_tokens_per_s: Quantity
    prompt_tokens_per_s: Quantity
    steps_per_s: Quantity
    tokens_per_step: Quantity
    running: Quantity
    waiting: Quantity
    kv_cache_usage: Quantity
    ttft_p50_s: Quantity
    ttft_p99_s: Quantity
    itl_p50_s: Quantity
    itl_p99_s: Quantity
    context_tokens: Quantity
    bytes_per_step: Quantity
    floor_step_s: Quantity
    measured_step_s: Quantity
    above_floor: Quantity  # measured step / floor step
    mbu: Quantity
    mfu: Quantity
    engine_bytes_per_step: Quantity  # vLLM's own estimate, beside inferlab's
    engine_mbu: Quantity
    floor_bound: Bound | None  # at this batch and context
    # The engine alone at the running batch, and its step's growth with the batch (share of a
    # lone step per extra stream): the verdict's numbers (metrics/verdict.py).
    engine_step_s: Quantity = Quantity(None, "unknown: no engine baseline")
    engine_growth: Quantity = Quantity(None, "unknown: no engine baseline")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.to_json() if isinstance(v, Quantity) else v
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Live:
        kw: dict[str, Any] = {}
        for f in fields(cls):
            v = d.get(f.name)
            kw[f.name] = Quantity.from_json(v) if isinstance(v, dict) else v
        return cls(**kw)


def _rate(d: Delta | None, name: str, what: str, dialect: str) -> Quantity:
    if d is None:
        return unknown("one scrape so far; a rate needs two")
    n = d.counters.get(name)
    if n is None:
        why = "the server restarted" if d.reset else f"the {dialect} dialect publishes no {what}"
        return unknown(why)
    return Quantity(n / d.dt_s, f"{n:.0f} {what} in {d.dt_s:.1f} s")


def _gauge_mean(snaps: tuple[Snapshot, ...], name: str, what: str) -> Quantity:
    vals = [v for s in snaps if (v := getattr(s, name)) is not None]
    if not vals:
        return unknown(f"the {snaps[-1].dialect} dialect publishes no {what}")
    mean = sum(vals) / len(vals)
    return Quantity(mean, f"mean of {len(vals)} scrapes; now {vals[-1]:.3g}")


def _quantile(d: Delta | None, name: str, q: float) -> Quantity:
    if d is None:
        return unknown("one scrape so far; a window needs two")
    h = d.histograms.get(name)
    if h is None:
        return unknown("the server publishes no such histogram (or it restarted)")
    v = h.quantile(q)
    if v is None:
        return unknown("no observations in the window")
    return Quantity(v, f"p{q * 100:.0f} of {h.count:.0f} in the window, bucket-interpolated")


def _context(snaps: tuple[Snapshot, ...], running: Quantity, ph: Floor) -> Quantity:
    """Tokens in each running sequence's KV: the engine's KV use, else a stated --context."""
    last = snaps[-1]
    if last.kv_cache_usage is not None and last.kv_capacity_tokens and running.value:
        usage = _gauge_mean(snaps, "kv_cache_usage", "KV use").value or 0.0
        tokens = usage * last.kv_capacity_tokens
        return Quantity(
            tokens / running.value,
            f"KV use {usage:.2%} x {last.kv_capacity_tokens:.0f} tokens / {running.value:.3g} "
            "running (block-rounded)",
        )
    if ph.context_tokens is not None:
        return Quantity(float(ph.context_tokens), "stated --context")
    if running.value == 0:
        return Quantity(0.0, "nothing running")
    return unknown("the server publishes no KV use x capacity; state --context TOKENS")


@dataclass(frozen=True, slots=True)
class _Step:
    bytes_per_step: float
    flops_per_step: float
    floor: StepTime


def _floor_step(ph: Floor, batch: float, context: int) -> _Step:
    """decode_point at the whole batch, with its KV and FLOPs scaled to the mean batch."""
    nb = max(1, round(batch))
    p = decode_point(ph.cost, ph.hardware, nb, context)
    b = max(batch, 1e-9)
    bytes_step = p.weight_bytes_per_step + b * p.kv_bytes_per_sequence
    flops_step = b * p.flops_per_step / nb
    step = roofline(bytes_step, flops_step, ph.hardware.bandwidth_bytes_per_s, ph.peak_flops_per_s)
    return _Step(bytes_step, flops_step, step)


def derive(snaps: tuple[Snapshot, ...], ph: Floor) -> Live:
    """The live quantities over `snaps` (oldest first, no restart inside)."""
    d = delta(snaps[0], snaps[-1]) if len(snaps) >= 2 else None
    if d is not None and d.dt_s <= 0:
        d = None
    dialect = snaps[-1].dialect
    gen = _rate(d, "generation_tokens", "generated tokens", dialect)
    running = _gauge_mean(snaps, "running", "running-requests gauge")
    steps = _rate(d, "steps", "engine steps", dialect)
    if dialect == "llamacpp" and steps.value is not None and running.value is not None:
        # llama.cpp adds a request's tokens only when it ends: a 10 s window sees bursts
        gen = Quantity(
            steps.value * running.value,
            "engine steps/s x mean running (llama.cpp counts tokens only at a request's end)",
        )
    prompt = _rate(d, "prompt_tokens", "prompt tokens", dialect)
    if gen.value is not None and steps.value:
        tps = Quantity(gen.value / steps.value, "generated tokens/s / engine steps/s")
        if dialect == "llamacpp":
            tps = Quantity(tps.value, "mean running (llama.cpp: from steps x running)")
    else:
        tps = unknown("needs generated tokens and engine steps in the window")
    ctx = _context(snaps, running, ph)
    phys = _physics(d, ph, steps, running, ctx, gen, prompt)
    return Live(
        window_s=d.dt_s if d else 0.0,
        samples=len(snaps),
        generated_tokens_per_s=gen,
        prompt_tokens_per_s=prompt,
        steps_per_s=steps,
        tokens_per_step=tps,
        running=running,
        waiting=_gauge_mean(snaps, "waiting", "waiting-requests gauge"),
        kv_cache_usage=_gauge_mean(snaps, "kv_cache_usage", "KV-cache use"),
        ttft_p50_s=_quantile(d, "ttft_s", 0.5),
        ttft_p99_s=_quantile(d, "ttft_s", 0.99),
        itl_p50_s=_quantile(d, "itl_s", 0.5),
        itl_p99_s=_quantile(d, "itl_s", 0.99),
        context_tokens=ctx,
        **phys,
        **_engine_alone(ph, running, prompt, steps),
    )


def _engine_alone(
    ph: Floor, running: Quantity, prompt: Quantity, steps: Quantity
) -> dict[str, Any]:
    """The engine alone doing the window's work: its decode step at the running batch, plus
    the window's prompt tokens per step at its own prefill rate (a served step that carried
    prompts is compared with the engine's time for the same tokens, not with a bare decode);
    and the engine's growth with the batch."""
    if not isinstance(ph, EngineFloor) or ph.engine is None:
        return {}
    step = engine_step(ph.engine, running.value)
    basis = "engine-bench at the running batch"
    if step is not None and prompt.value and steps.value:
        step += prompt.value / steps.value * ph.engine.prefill.per_token_s
        basis += " + the window's prompt tokens per step at its prefill rate"
    growth = engine_growth(ph.engine)
    return {
        "engine_step_s": Quantity(step, basis)
        if step is not None
        else unknown("the running batch is outside the engine's measured batches"),
        "engine_growth": Quantity(growth[0], growth[1])
        if growth is not None
        else unknown("the engine measured one batch only"),
    }


def _physics(
    d: Delta | None,
    ph: Floor,
    steps: Quantity,
    running: Quantity,
    ctx: Quantity,
    gen: Quantity,
    prompt: Quantity,
) -> dict[str, Any]:
    out: dict[str, Any] = {"floor_bound": None}
    if running.value is None:
        why = "needs the running batch: " + running.basis.removeprefix("unknown: ")
        for k in ("bytes_per_step", "floor_step_s", "above_floor", "mbu"):
            out[k] = unknown(why)
        out["measured_step_s"] = _measured(steps)
    else:
        out.update(_mbu(ph, steps, running.value, ctx))
    out["mfu"] = _mfu(ph, gen, prompt, ctx)
    out.update(_engine(d, ph, steps))
    return out


def _measured(steps: Quantity) -> Quantity:
    if steps.value is None:
        return unknown("needs engine steps: " + steps.basis.removeprefix("unknown: "))
    if steps.value == 0:
        return unknown("idle: no engine steps in the window")
    return Quantity(1.0 / steps.value, "window / engine steps")


def _mbu(ph: Floor, steps: Quantity, batch: float, ctx: Quantity) -> dict[str, Any]:
    context = round(ctx.value) if ctx.value is not None else 0
    st = _floor_step(ph, batch, context)
    kv_note = "" if ctx.value is not None else "; lower bound: KV not counted (context unknown)"
    basis = (
        f"weights {fmt_bytes(ph.cost.weight_bytes_per_step(max(1, round(batch))))} + "
        f"{batch:.3g} x KV of {context} tokens{kv_note}"
    )
    measured = _measured(steps)
    out: dict[str, Any] = {
        "bytes_per_step": Quantity(st.bytes_per_step, basis),
        "floor_step_s": Quantity(st.floor.step_time_s, f"roofline, {st.floor.bound}-bound"),
        "floor_bound": st.floor.bound,
        "measured_step_s": measured,
    }
    if steps.value == 0:
        out["mbu"] = Quantity(0.0, "idle: no engine steps in the window")
        out["above_floor"] = unknown("idle: no engine steps in the window")
        return out
    if measured.value is None:
        why = measured.basis.removeprefix("unknown: ")
        out["mbu"] = out["above_floor"] = unknown(why)
        return out
    u = utilisation(
        st.bytes_per_step,
        st.flops_per_step,
        measured.value,
        ph.hardware.bandwidth_bytes_per_s,
        ph.peak_flops_per_s,
        st.floor.step_time_s,
    )
    out["mbu"] = Quantity(u.mbu, f"bytes per step x {steps.value:.4g} steps/s / peak{kv_note}")
    out["above_floor"] = Quantity(1.0 / u.floor_over_measured, "measured step / floor step")
    return out


def _mfu(ph: Floor, gen: Quantity, prompt: Quantity, ctx: Quantity) -> Quantity:
    peak = ph.peak_flops_per_s
    if not math.isfinite(peak) or peak <= 0:
        return unknown("no peak FLOPS for this hardware; state --flops")
    if gen.value is None:
        return unknown("needs generated tokens/s: " + gen.basis.removeprefix("unknown: "))
    c = ph.cost
    # 2 x active params per token, plus attention over the context where it is known
    per_gen = c.flops_per_token(round(ctx.value) if ctx.value is not None else 0)
    flops = gen.value * per_gen + (prompt.value or 0.0) * c.prefill_flops(1)
    note = "" if prompt.value is not None else "; prompt tokens not published"
    return Quantity(flops / peak, f"(decode + prefill FLOPs)/s / peak FLOPS{note}")


def _engine(d: Delta | None, ph: Floor, steps: Quantity) -> dict[str, Quantity]:
    """vLLM's own estimated bytes read, per step and as a fraction of peak bandwidth."""
    rb = d.counters.get("estimated_read_bytes") if d is not None else None
    n = d.counters.get("steps") if d is not None else None
    if d is None or rb is None:
        why = "the engine publishes no estimate of bytes read (vLLM: --enable-mfu-metrics)"
        return {"engine_bytes_per_step": unknown(why), "engine_mbu": unknown(why)}
    rb *= ph.devices  # per GPU -> the whole tensor-parallel group, as inferlab's bytes/step
    per_step = (
        Quantity(rb / n, "engine's estimated read bytes / steps")
        if n
        else unknown("no engine steps in the window")
    )
    bw = rb / d.dt_s
    return {
        "engine_bytes_per_step": per_step,
        "engine_mbu": Quantity(bw / ph.hardware.bandwidth_bytes_per_s, "engine's bytes/s / peak"),
    }
