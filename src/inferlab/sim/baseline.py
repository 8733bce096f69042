"""The step time fitted to an engine-bench folder, and the llama.cpp policy's knobs.

`--engine-baseline DIR` (or a `--calibrate` that names an engine-bench folder) gives the
step time; the baseline supplies the model and the thread count, and a served run or a
model that names another refuses unless forced. A batch past 2x the largest measured one
is refused unless forced; one past the largest is extrapolated, and said so.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.errors import InferlabError
from inferlab.sameserver import count_problems, refuse_mismatch, same_model
from inferlab.sim.policies import KNOBS

if TYPE_CHECKING:
    from inferlab.engine_result import EngineBench
    from inferlab.sim.policies.llamacpp import LlamaCppKnobs
    from inferlab.sim.scheduler import Policy
    from inferlab.sim.stepmodel import StepChoice
    from inferlab.sim.steptime_engine import EngineStepTime
    from inferlab.summary import RunSummary

RESULT_NAME = "engine_bench.json"  # engines.llama_bench.RESULT_NAME, without importing it early
LLAMA_KNOBS = KNOBS["llama.cpp"]


def is_engine_folder(path: Path | None) -> bool:
    return path is not None and (
        (path / RESULT_NAME).is_file() if path.is_dir() else path.name == RESULT_NAME
    )


def baseline_path(engine_baseline: Path | None, calibrate: Path | None) -> Path | None:
    """The engine baseline: --engine-baseline, or a --calibrate naming an engine-bench folder."""
    if engine_baseline is not None:
        return engine_baseline
    return calibrate if is_engine_folder(calibrate) else None


def knobs(c: StepChoice) -> LlamaCppKnobs:
    """The knobs given; with a profile, the profiled server's slots and context otherwise."""
    from inferlab.sim.policies.llamacpp import LlamaCppKnobs

    given = dict(c.knobs)
    if c.profile is not None:
        from inferlab.sim.profiled import profile_knobs

        given = profile_knobs(c.profile, given)
    return LlamaCppKnobs(**given)


def check_same_server(eb: EngineBench, c: StepChoice, run: RunSummary | None) -> None:
    """Refuse (unless forced) a baseline of another model or thread count than the server."""
    problems = []
    base = Path(eb.gguf).name
    if c.model_name and c.model_name.endswith(".gguf") and Path(c.model_name).name != base:
        problems.append(f"--model {c.model_name} is not the baseline's model {base}")
    threads = c.threads
    if run is not None:
        named = [run.server.model or "", run.floor.model if run.floor else ""]
        if any(named) and not any(same_model(base, n) for n in named if n):
            served = ", ".join(filter(None, named))
            problems.append(f"the served run's model ({served}) is not {base}")
        threads = threads or run.extra.get("server_threads")  # the demo records it
    problems += count_problems("baseline", (threads, None), (eb.threads, None))
    what = f"engine baseline {eb.gguf} ({eb.threads} threads)"
    refuse_mismatch(what, problems, "measure the same model and threads", c.force)


def engine_model(c: StepChoice) -> tuple[EngineStepTime, dict[str, Any]] | None:
    """The engine-baseline step-time model and its description, or None without a baseline."""
    from inferlab.rundir import load_summary
    from inferlab.sim.steptime_engine import EngineStepTime, fit_engine

    path, eb = c.engine_baseline, c.baseline
    if path is None or eb is None:
        return None
    run = load_summary(c.served_run) if c.served_run is not None else None
    check_same_server(eb, c, run)
    over = c.serving_overhead_s
    if over is not None and not (math.isfinite(over) and over >= 0):
        raise InferlabError("--serving-overhead must be a finite time >= 0, e.g. 2ms")
    how = "stated (--serving-overhead)" if over is not None else ""
    model = EngineStepTime(fit_engine(eb), over or 0.0, knobs(c).n_ubatch, c.force, how)
    if run is not None and over is None:
        from inferlab.sim.predict import measure_overhead

        labels = list(c.calibrate_levels) if c.calibrate_levels else None
        value, how = measure_overhead(model, knobs(c), run, labels)
        model = dataclasses.replace(model, serving_overhead_s=value, overhead_source=how)
    return model, describe(model, path)


def describe(model: EngineStepTime, path: Path) -> dict[str, Any]:
    f = model.fit
    return {
        "step_time_model": "engine baseline",
        "engine_baseline": str(path),
        "gguf": f.gguf,
        "threads": f.threads,
        "measured_batches": list(f.batches),
        "decode_step_s": list(f.decode_step_s),
        "context_prompts": list(f.context_prompts),
        "context_s_per_token": f.context_s_per_token,
        "prefill_base_s": f.prefill_base_s,
        "prefill_per_token_s": f.prefill_per_token_s,
        "serving_overhead_s": model.serving_overhead_s,
        "serving_overhead_source": model.overhead_source or "none given (0)",
        "batch_limit": model.batch_limit,
    }


def llama_policy(name: str, c: StepChoice) -> Policy | None:
    """--policy llama.cpp: its knobs, as llama-server's; None for another policy (whose
    command line may not name them)."""
    if name == "llama.cpp":
        return knobs(c).policy()
    given = dict(c.knobs)
    named = [k.flag for k in LLAMA_KNOBS if k.attr in given]
    if named:
        raise InferlabError(f"{', '.join(named)} apply to --policy llama.cpp only")
    return None


def largest_batch(policy: Policy, users: int | None) -> int:
    """The largest batch a simulation can run: slots, --max-batch, or the closed loop's users."""
    return min(policy.max_batch, users) if users else policy.max_batch


def check_batches(model: Any, policy: Policy, users: int | None) -> list[str]:
    """Refuse a batch past the model's limit up front; the lines that state the fit."""
    from inferlab.sim.steptime_engine import EngineStepTime
    from inferlab.sim.steptime_profile import ProfileStepTime

    if not isinstance(model, EngineStepTime | ProfileStepTime):
        return []
    most = largest_batch(policy, users)
    model.check_batch(most)
    return model.describe(most)
