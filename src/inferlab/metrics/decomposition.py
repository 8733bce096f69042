"""Where the time per token goes: floor -> engine alone -> served, per load level.

served TPOT = floor (bytes / bandwidth) + kernel overhead (engine alone - floor:
dequantising, matmuls, launches) + serving overhead (served - engine alone: HTTP,
scheduler, sampling, streaming). Each part is also a share of the served TPOT,
and the reading names the largest one from the numbers. A served TPOT clearly
below the engine's own step at the same batch (beyond the engine's measured
noise) is impossible for an honest count: the warning `faster_than_engine`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from inferlab.engines.result import EngineBench
from inferlab.metrics.checks import warning
from inferlab.summary import EngineSplit, LevelSummary, RunSummary, RunWarning

PARTS = ("floor", "kernels", "serving", "engine")
PART_WORDS = {
    "engine": "the engine alone (its own step; no floor was given to split it further)",
    "floor": "the floor itself (the bytes each step must read / the bandwidth)",
    "kernels": "the engine's kernels (engine alone - floor: dequantise, matmul, launch overhead)",
    "serving": "serving (served - engine alone: HTTP, scheduler, sampling, streaming)",
}


def split_time(
    served_s: float, engine_s: float, noise_s: float, floor_s: float | None
) -> dict[str, Any]:
    """The three parts and their shares of the served TPOT (a part may be negative)."""
    kernel = None if floor_s is None else engine_s - floor_s
    serving = served_s - engine_s
    shares = {
        "floor": None if floor_s is None else floor_s / served_s,
        "kernels": None if kernel is None else kernel / served_s,
        "serving": serving / served_s,
    }
    known: dict[str, float] = {k: v for k, v in shares.items() if v is not None}
    if floor_s is None:  # without a floor the engine's whole step is one part
        known = {"engine": engine_s / served_s, "serving": serving / served_s}
    return {
        "served_tpot_s": served_s,
        "engine_step_time_s": engine_s,
        "engine_noise_s": noise_s,
        "floor_s": floor_s,
        "kernel_overhead_s": kernel,
        "serving_overhead_s": serving,
        "floor_share": shares["floor"],
        "kernel_share": shares["kernels"],
        "serving_share": shares["serving"],
        "largest": max(known, key=lambda k: known[k]),
    }


def level_batch(lv: LevelSummary) -> int | None:
    """The batch the engine is compared at: the concurrency, else the mean decoding streams."""
    if lv.concurrency is not None:
        return int(lv.concurrency)
    return max(1, round(lv.mean_active_streams)) if lv.mean_active_streams else None


def split_level(lv: LevelSummary, engine: EngineBench) -> EngineSplit | None:
    served = lv.tpot_s.p50
    batch = level_batch(lv)
    if not served or batch is None:
        return None
    at = engine.step_at(batch)
    if at is None:
        return None
    step, source = at
    floor = lv.comparison.predicted_step_time_s if lv.comparison else None
    parts = split_time(served, step, engine.noise_s(batch), floor)
    return EngineSplit(batch=batch, batch_source=source, **parts)


def _mismatch(summary: RunSummary, engine: EngineBench) -> list[RunWarning]:
    w = summary.workload
    out = []
    ran = (engine.prompt_tokens, engine.output_tokens)
    if (w.prompt_tokens, w.output_tokens) != ran:
        out.append(
            warning(
                "engine_workload_mismatch",
                "run",
                "warning",
                f"the engine baseline ran {ran[0]} -> {ran[1]} tokens, the sweep "
                f"{w.prompt_tokens} -> {w.output_tokens}: steps are compared at "
                "different context lengths",
            )
        )
    threads = summary.extra.get("server_threads")
    if threads is not None and threads != engine.threads:
        out.append(
            warning(
                "engine_workload_mismatch",
                "run",
                "warning",
                f"the engine baseline used {engine.threads} thread(s), the server {threads}",
            )
        )
    if any(r.timed_out for r in engine.runs):
        passes = ", ".join(f"b={s.batch}: {len(s.step_samples_s)}" for s in engine.steps)
        out.append(
            warning(
                "engine_budget",
                "run",
                "info",
                f"the engine benchmark reached its time budget; passes kept per batch: {passes}",
            )
        )
    if engine.cpu_fraction < 0.8:
        out.append(
            warning(
                "engine_starved",
                "run",
                "warning",
                f"the engine benchmark got {engine.cpu_fraction:.0%} of its threads' CPU time "
                "(other processes were running): its step times include waiting for a core",
            )
        )
    return out


def faster_than_engine(label: str, s: EngineSplit) -> RunWarning:
    return warning(
        "faster_than_engine",
        label,
        "warning",
        f"served TPOT p50 {s.served_tpot_s * 1e3:.3g} ms is below the engine's own step "
        f"{s.engine_step_time_s * 1e3:.3g} ms at batch {s.batch} by more than its noise "
        f"({s.engine_noise_s * 1e3:.2g} ms): something is miscounted (several tokens per "
        "event, cached outputs) or the engine baseline ran on a busier machine",
    )


def below_floor(label: str, s: EngineSplit) -> RunWarning:
    return warning(
        "engine_below_floor",
        label,
        "warning",
        f"the engine alone stepped in {s.engine_step_time_s * 1e3:.3g} ms at batch {s.batch}, "
        f"below the floor {(s.floor_s or 0.0) * 1e3:.2f} ms: the floor's bandwidth or FLOPS "
        "figure is too low (a probe on a busy machine?)",
    )


def apply_engine_baseline(summary: RunSummary, engine: EngineBench) -> RunSummary:
    """The run with `engine_baseline` set, an `engine` split on every level, and warnings."""
    warns = _mismatch(summary, engine)
    levels = []
    for lv in summary.levels:
        s = split_level(lv, engine)
        levels.append(dataclasses.replace(lv, engine=s))
        if s is not None and s.faster_than_engine:
            warns.append(faster_than_engine(lv.label, s))
        if s is not None and s.below_floor:
            warns.append(below_floor(lv.label, s))
    return dataclasses.replace(
        summary,
        levels=tuple(levels),
        warnings=summary.warnings + tuple(warns),
        engine_baseline=engine,
    )


def read_engine(summary: RunSummary) -> list[str]:
    """Where the time goes, in words computed from the splits (none without a baseline)."""
    splits = [(lv.label, lv.engine) for lv in summary.levels if lv.engine is not None]
    if not splits:
        return []
    label, s = splits[0]
    parts = [f"served {s.served_tpot_s * 1e3:.1f} ms ="]
    if s.floor_s is not None and s.kernel_overhead_s is not None:
        parts.append(f"floor {s.floor_s * 1e3:.2f} ms ({s.floor_share:.0%}) +")
        parts.append(f"kernels {s.kernel_overhead_s * 1e3:.1f} ms ({s.kernel_share:.0%}) +")
    else:
        parts.append(f"engine alone {s.engine_step_time_s * 1e3:.1f} ms +")
    parts.append(f"serving {s.serving_overhead_s * 1e3:.1f} ms ({s.serving_share:.0%})")
    out = [
        f"Where the time goes at {label}: {' '.join(parts)}; the largest share is "
        f"{PART_WORDS[s.largest]}."
    ]
    if min(s.kernel_overhead_s or 0.0, s.serving_overhead_s) < 0:
        out.append(
            "A negative part means the two measurements it lies between disagree (see the "
            "warnings): read the split with care."
        )
    if len(splits) > 1:
        serv = [x.serving_share for _, x in splits]
        most = max(splits, key=lambda p: p[1].serving_share)
        out.append(
            f"Across the levels serving adds {min(serv):.0%} to {max(serv):.0%} of the served "
            f"TPOT (most at {most[0]}); the rest is the engine's own step."
        )
    out.extend(_prefill_line(summary))
    return out


def _prefill_line(summary: RunSummary) -> list[str]:
    eb = summary.engine_baseline
    first = next((lv for lv in summary.levels if lv.concurrency == 1), None)
    if eb is None or first is None or not first.ttft_s.p50:
        return []
    pre = eb.prefill
    return [
        f"The engine's own prefill of {pre.n_tokens} tokens takes {pre.mean_s:.3g} s "
        f"({pre.tokens_per_s:.0f} tok/s); the served TTFT p50 at c=1 is "
        f"{first.ttft_s.p50:.3g} s."
    ]
