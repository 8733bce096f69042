"""The step time of the engine alone: fitted to its own measurements (engine_bench.json).

llama.cpp's decode step is not `a + b x batch`: on one thread here it is
13.3 / 24.5 / 38.9 / 63.5 / 122 ms at batch 1 / 2 / 4 / 8 / 16. So the step is
read off what `inferlab engine-bench` measured, piece by piece:

  decode     the step at each measured batch (the fastest pass), joined by straight
             lines between measured batches: monotone (a measurement that dips below a
             smaller batch's is raised to it, and the fit says so). Beyond the largest
             measured batch the last segment's slope carries on, stated; past 2x the
             largest it is refused unless forced. Below the smallest, the first slope.
  context    the same batches measured after two or more prompt lengths give the cost
             of one sequence's context token, k (least squares over the batches):
             step(D, contexts) = decode(D) + k x (sum of contexts - D x the reference
             context), the reference being the shortest prompt + half the output (the
             mean context while batched-bench decodes).
  prefill    t = per-batch + per-token x tokens, least squares over batched-bench's
             prefill rows (B prompts at once) and llama-bench's lone prefill. A step of
             more than n_ubatch tokens runs as that many ubatches, each paying the
             per-batch cost again. Prompt tokens riding beside decodes add their
             per-token cost to the decode step (one llama_decode call, one per-batch).
  serving    a constant per step: stated, measured from a served run, or 0 (said so).

Attention of a prompt chunk over its own cached tokens is not modelled beyond what the
prefill fit holds (prompts of the measured lengths).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from inferlab.engines.result import BatchStep, EngineBench
from inferlab.errors import ConfigError, InferlabError
from inferlab.sim.steptime.base import DecodeBatch

EXTRAPOLATION_LIMIT = 2.0  # batches past this multiple of the largest measured are refused


@dataclass(frozen=True, slots=True)
class EngineFit:
    """What the engine measured, reduced to the numbers the step time uses."""

    batches: tuple[int, ...]  # measured, ascending
    decode_step_s: tuple[float, ...]  # at those batches, made monotone
    raised: tuple[int, ...]  # batches whose measurement dipped and was raised
    ref_context_tokens: float  # per-sequence context the decode steps were measured at
    context_s_per_token: float  # k: one sequence's one context token
    context_prompts: tuple[int, ...]  # prompt lengths measured (one: no growth known)
    context_within_noise: bool  # the growth measured is smaller than the engine's noise
    prefill_base_s: float  # per llama_decode call (per batch / ubatch)
    prefill_per_token_s: float
    threads: int
    gguf: str

    @property
    def largest_batch(self) -> int:
        return self.batches[-1]

    def decode_at(self, batch: int) -> float:
        """The decode step at `batch` and the reference context (interpolated or
        extrapolated along the nearest segment; no limit checked here)."""
        b, s = self.batches, self.decode_step_s
        if len(b) == 1:
            return s[0] * batch / b[0]  # one measurement: proportional, stated in describe()
        if batch > b[-1]:
            return s[-1] + (s[-1] - s[-2]) / (b[-1] - b[-2]) * (batch - b[-1])
        if batch < b[0]:
            return max(s[0] - (s[1] - s[0]) / (b[1] - b[0]) * (b[0] - batch), 0.0)
        return float(np.interp(batch, b, s))


def _monotone(steps: Sequence[BatchStep]) -> tuple[tuple[float, ...], tuple[int, ...]]:
    out, raised, top = [], [], 0.0
    for s in steps:
        if s.step_time_s < top:
            raised.append(s.batch)
        top = max(top, s.step_time_s)
        out.append(top)
    return tuple(out), tuple(raised)


def _context_slope(eb: EngineBench, ref_ctx: float) -> float:
    """k from the batches measured after longer prompts (0 without them, or if noise
    made the longer context look faster)."""
    base = {s.batch: s.step_time_s for s in eb.steps}
    xs, ys = [], []
    for s in eb.context_steps:
        if s.batch in base:
            xs.append(s.batch * (s.prompt_tokens + s.output_tokens / 2 - ref_ctx))
            ys.append(s.step_time_s - base[s.batch])
    x, y = np.asarray(xs, float), np.asarray(ys, float)
    if not len(x) or not float(x @ x):
        return 0.0
    return max(float(x @ y / (x @ x)), 0.0)


def _within_noise(eb: EngineBench, k: float) -> bool:
    """Whether the growth fitted, at the largest batch over the prompts measured, is below
    that batch's measured noise (then it is a guess, and said so)."""
    if not eb.context_steps:
        return False
    top = max(s.batch for s in eb.steps)
    span = max(eb.context_prompts) - min(eb.context_prompts)
    return k * top * span < eb.noise_s(top)


def _prefill_fit(eb: EngineBench) -> tuple[float, float]:
    """(per batch, per token) by least squares over every prefill measured."""
    rows = [(s.batch * s.prompt_tokens, s.prefill_s) for s in (*eb.steps, *eb.context_steps)]
    rows.append((eb.prefill.n_tokens, eb.prefill.mean_s))
    tokens = np.asarray([r[0] for r in rows], float)
    times = np.asarray([r[1] for r in rows], float)
    if len(set(tokens.tolist())) < 2:
        return 0.0, float(times.mean() / tokens.mean())
    a = np.stack([np.ones_like(tokens), tokens], axis=1)
    (base, per), *_ = np.linalg.lstsq(a / times[:, None], np.ones_like(times), rcond=None)
    if per <= 0:  # noise: fall back to the mean rate
        return 0.0, float(times.sum() / tokens.sum())
    return max(float(base), 0.0), float(per)


def fit_engine(eb: EngineBench) -> EngineFit:
    """The step-time numbers from one engine-bench result."""
    if not eb.steps:
        raise InferlabError("the engine baseline holds no batch steps")
    steps = sorted(eb.steps, key=lambda s: s.batch)
    decode, raised = _monotone(steps)
    ref_ctx = eb.prompt_tokens + eb.output_tokens / 2
    base, per = _prefill_fit(eb)
    return EngineFit(
        batches=tuple(s.batch for s in steps),
        decode_step_s=decode,
        raised=raised,
        ref_context_tokens=ref_ctx,
        context_s_per_token=(k := _context_slope(eb, ref_ctx)),
        context_prompts=eb.context_prompts,
        context_within_noise=_within_noise(eb, k),
        prefill_base_s=base,
        prefill_per_token_s=per,
        threads=eb.threads,
        gguf=eb.gguf,
    )


@dataclass(frozen=True, slots=True)
class EngineStepTime:
    """The step-time model: the engine's fit, a serving overhead per step, the ubatch."""

    fit: EngineFit
    serving_overhead_s: float = 0.0
    ubatch_tokens: int = 512  # llama.cpp's default n_ubatch
    force: bool = False  # allow batches past 2x the largest measured
    overhead_source: str = ""  # "stated", "measured from RUN at c=1"; "": none given (0)
    _decode: dict[int, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_decode", {})

    @property
    def batch_limit(self) -> int | None:
        """The largest batch the model answers for (None: forced, no limit)."""
        return None if self.force else int(EXTRAPOLATION_LIMIT * self.fit.largest_batch)

    def check_batch(self, batch: int, where: str = "") -> None:
        """Refuse `batch` decoders past `batch_limit`; `where` opens the message. The
        simulator asks it of every batch it reaches (sim/engine.py), not each step."""
        limit = self.batch_limit
        if limit is not None and batch > limit:
            raise ConfigError(
                f"{where}batch {batch} is beyond 2x the largest batch the engine baseline "
                f"measured ({self.fit.largest_batch}), a limit of {limit} decoders: measure "
                "larger batches (engine-bench --batch) or add {force} to extrapolate anyway"
            )

    def decode_s(self, count: int) -> float:
        t = self._decode.get(count)
        if t is None:
            t = self._decode[count] = self.fit.decode_at(count)
        return t

    @property
    def extra_ubatch_s(self) -> float:
        return 0.0

    def split_decode_s(self, groups: tuple[int, ...]) -> float:
        return 0.0  # the engine's sweep decodes in one ubatch: it never saw a split

    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        fit = self.fit
        n_pre = sum(n for n, _ in prefill)
        tokens = decode.count + n_pre
        t = fit.prefill_per_token_s * n_pre
        if decode.count:
            ctx = decode.context_sum - decode.count * fit.ref_context_tokens
            t += max(self.decode_s(decode.count) + fit.context_s_per_token * ctx, 0.0)
        else:
            t += fit.prefill_base_s
        extra_ubatches = -(-tokens // self.ubatch_tokens) - 1 if tokens else 0
        return t + extra_ubatches * fit.prefill_base_s + self.serving_overhead_s

    def describe(self, max_batch: int | None = None) -> list[str]:
        """What the model assumes, in words: measured range, extrapolation, context, overhead."""
        return describe_fit(self, max_batch)


def describe_fit(m: EngineStepTime, max_batch: int | None) -> list[str]:
    f = m.fit
    pairs = zip(f.batches, f.decode_step_s, strict=True)
    steps = ", ".join(f"{b}: {s * 1e3:.1f}" for b, s in pairs)
    out = [f"decode step ms by batch, measured (piecewise linear between): {steps}"]
    if f.raised:
        out.append(f"  raised to stay monotone (their measurement dipped): batches {f.raised}")
    if len(f.batches) == 1:
        out.append("  one batch measured: other batches scaled in proportion to it")
    if f.batches[0] > 1 and len(f.batches) > 1:
        out.append(f"  batches below {f.batches[0]}: extrapolated along the first segment")
    if max_batch is not None and max_batch > f.largest_batch:
        slope = (f.decode_at(f.largest_batch + 1) - f.decode_at(f.largest_batch)) * 1e3
        out.append(
            f"  batches {f.largest_batch + 1}..{max_batch} are beyond the measured range: "
            f"extrapolated along the last segment (+{slope:.2f} ms per sequence)"
            + (" (forced past 2x)" if m.force and max_batch > 2 * f.largest_batch else "")
        )
    if len(f.context_prompts) > 1:
        out.append(
            f"context: +{f.context_s_per_token * 1e6:.2f} us per sequence per context token "
            f"(measured after prompts of {', '.join(map(str, f.context_prompts))} tokens"
            + ("; smaller than the engine's noise: a guess)" if f.context_within_noise else ")")
        )
    else:
        out.append("context: measured after one prompt length only: no growth with context")
    out.append(
        f"prefill: {f.prefill_base_s * 1e3:.2f} ms per batch + "
        f"{f.prefill_per_token_s * 1e3:.3f} ms per token (ubatch {m.ubatch_tokens})"
    )
    out.append(
        f"serving overhead: {m.serving_overhead_s * 1e3:.2f} ms per step ({m.overhead_source})"
        if m.overhead_source
        else "serving overhead: 0, none given (--serving-overhead T, or --calibrate RUN)"
    )
    return out
