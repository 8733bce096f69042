"""One reading of where the time per token goes, decided once from the same numbers.

watch (its one-line reading), the report (its sentences) and the demo print this
verdict, so one run never gets two readings. The numbers, at one batch:

  floor_s    the physics floor of a step (bytes / bandwidth, or FLOPs / peak);
  engine_s   the engine alone at that batch (llama-batched-bench), when measured;
  served_s   the served step (TPOT p50, or window / engine steps);
  growth     how the step grows with the batch: (step(B) / step(b) - 1) / (B / b - 1),
             0 when the batch shares the whole step (a weight read: memory-bound),
             1 when each stream adds a whole step of work (compute-bound). Taken from
             the engine alone when it was measured (the same figure everywhere),
             else from the served levels.

Where: the largest of floor, kernels (engine - floor) and serving (served - engine);
without the engine alone, kernels and serving cannot be told apart: past 3x the
floor (one of the two then surely outweighs it) the verdict says only that the time
goes above the floor, to the engine or serving; within 3x, to the floor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inferlab.engines.result import EngineBench

Where = Literal["floor", "kernels", "serving", "above_floor", "unknown"]
Bound = Literal["memory", "compute", "mixed", "unknown"]

COMPUTE_SHARE = 0.4  # growth at or above: each stream adds most of a step's work
MEMORY_SHARE = 0.15  # growth at or below: the batch shares the step

WHERE_WORDS: dict[Where, str] = {
    "floor": "the floor itself (the bytes each step must read / the bandwidth)",
    "kernels": "the engine's own kernels (dequantising, multiplying, launches), not to serving",
    "serving": "serving (HTTP, scheduler, sampling, streaming), not to the engine's kernels",
    "above_floor": "the engine or serving (the engine alone was not measured to tell which)",
    "unknown": "an unknown share (no floor and no engine-alone step to compare with)",
}


@dataclass(frozen=True, slots=True)
class TimeNumbers:
    served_s: float
    floor_s: float | None = None
    engine_s: float | None = None
    growth: float | None = None
    growth_basis: str = ""  # e.g. "engine alone, batch 1 -> 16"


@dataclass(frozen=True, slots=True)
class Verdict:
    where: Where
    bound: Bound
    numbers: TimeNumbers

    def sentence(self) -> str:
        n = self.numbers
        parts = [f"served {n.served_s * 1e3:.1f} ms"]
        if n.engine_s is not None:
            parts.append(f"engine alone {n.engine_s * 1e3:.1f} ms")
        if n.floor_s is not None:
            parts.append(f"floor {n.floor_s * 1e3:.2f} ms")
        text = f"the time goes to {WHERE_WORDS[self.where]} ({', '.join(parts)})"
        return text + _bound_words(self.bound, n)


def _bound_words(bound: Bound, n: TimeNumbers) -> str:
    if bound == "unknown" or n.growth is None:
        return ""
    basis = f" ({n.growth_basis})" if n.growth_basis else ""
    if bound == "compute":
        what = "the work grows with the batch: compute-bound"
    elif bound == "memory":
        what = "the batch shares the step: memory-bound"
    else:
        what = "partly shared by the batch, partly compute"
    return f"; each extra stream costs {n.growth:.0%} of a lone step{basis}: {what}"


def bound_of(growth: float | None) -> Bound:
    if growth is None:
        return "unknown"
    if growth >= COMPUTE_SHARE:
        return "compute"
    if growth <= MEMORY_SHARE:
        return "memory"
    return "mixed"


def growth_share(step_lo_s: float, step_hi_s: float, batch_lo: float, batch_hi: float) -> float:
    """Marginal cost of a stream as a share of the step at the smaller batch."""
    return (step_hi_s / step_lo_s - 1.0) / (batch_hi / batch_lo - 1.0)


def engine_growth(eb: EngineBench) -> tuple[float, str] | None:
    """The growth from the engine alone: its smallest and largest measured batches."""
    steps = sorted(eb.steps, key=lambda s: s.batch)
    if len(steps) < 2 or steps[0].step_time_s <= 0:
        return None
    lo, hi = steps[0], steps[-1]
    share = growth_share(lo.step_time_s, hi.step_time_s, lo.batch, hi.batch)
    return share, f"engine alone, batch {lo.batch} -> {hi.batch}"


def engine_step(eb: EngineBench | None, batch: float | None) -> float | None:
    """The engine alone at a batch (measured or interpolated), if within what it measured."""
    if eb is None or batch is None:
        return None
    at = eb.step_at(max(1, round(batch)))
    return at[0] if at is not None else None


def decide(n: TimeNumbers) -> Verdict:
    """The verdict from the numbers: the largest part, and the bound from the growth."""
    bound = bound_of(n.growth)
    if n.engine_s is not None:
        parts: dict[Where, float] = {"serving": n.served_s - n.engine_s}
        if n.floor_s is not None:
            parts["floor"] = n.floor_s
            parts["kernels"] = n.engine_s - n.floor_s
        else:
            parts["kernels"] = n.engine_s
        return Verdict(max(parts, key=lambda k: parts[k]), bound, n)
    if n.floor_s is not None and n.floor_s > 0:
        # The rest is two parts (kernels, serving) not told apart: past 3x the floor one of
        # them is surely larger than the floor; within it the floor may be the largest.
        return Verdict("floor" if 3 * n.floor_s >= n.served_s else "above_floor", bound, n)
    return Verdict("unknown", bound, n)
