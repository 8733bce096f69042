"""What `inferlab engine-bench` prints: the step per batch, the lone runs and their noise,
and how the step grows with the context."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inferlab.engines.result import EngineBench


def result_lines(eb: EngineBench) -> list[str]:
    """The result as the console shows it: one row per batch, then the lone runs and noise."""
    head = ("batch", "step ms", "spread", "noise ms", "tok/s total", "prefill s", "prefill tok/s")
    rows = [
        f"{head[0]:>5}  {head[1]:>8}  {head[2]:>6}  {head[3]:>8}  {head[4]:>11}  {head[5]:>9}  "
        f"{head[6]:>13}"
    ]
    for s in eb.steps:
        rows.append(
            f"{s.batch:>5}  {s.step_time_s * 1e3:>8.1f}  {s.spread_rel:>6.1%}  "
            f"{eb.noise_s(s.batch) * 1e3:>8.2f}  {s.tokens_per_s_total:>11.1f}  "
            f"{s.prefill_s:>9.3f}  {s.prefill_tokens_per_s:>13.1f}"
        )
    pp, tg = eb.prefill, eb.decode
    passes = "/".join(str(len(s.step_samples_s)) for s in eb.steps)
    budget = ", budget reached" if any(r.timed_out for r in eb.runs) else ""
    rows += [
        f"lone prefill ({pp.test}): {pp.mean_s:.3g} s +- {pp.stddev_s:.2g} s "
        f"({pp.tokens_per_s:.0f} tok/s, {len(pp.samples_s)} runs)",
        f"lone generation ({tg.test}): {tg.per_token_s * 1e3:.2f} ms per token +- "
        f"{tg.rel_stddev:.1%} ({len(tg.samples_s)} runs)",
        f"step: the fastest of the passes ({passes} per batch{budget}); noise: the larger of "
        f"{eb.noise_rel:.1%} (2 stddev of the lone repeats, or the tools' batch-1 "
        "disagreement) and the spread of the passes",
        f"CPU: the engine got {eb.cpu_fraction:.0%} of its {eb.threads} thread(s)' time",
    ]
    return rows + context_lines(eb)


def context_lines(eb: EngineBench) -> list[str]:
    """The step after each prompt length: how it grows with the context."""
    if not eb.context_steps:
        return ["context: measured after one prompt length only (no growth with context)"]
    by = {(s.prompt_tokens, s.batch): s.step_time_s for s in (*eb.steps, *eb.context_steps)}
    out = []
    for pp in eb.context_prompts:
        steps = ", ".join(
            f"b={s.batch} {by[(pp, s.batch)] * 1e3:.1f}" for s in eb.steps if (pp, s.batch) in by
        )
        out.append(f"after a {pp}-token prompt: step ms {steps}")
    return out
