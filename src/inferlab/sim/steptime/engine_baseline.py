"""The engine-bench baseline as the simulation's step time (`--engine-baseline DIR`, or a
`--calibrate` that names an engine-bench folder).

The baseline supplies the model and the thread count; a served run or a model that names
another refuses unless forced. A batch past 2x the largest measured one is refused unless
forced; one past the largest is extrapolated, and said so (ranges.py). The serving overhead
per step is stated, or measured from a served run beside the baseline (sim/predict.py's
`measure_overhead`), or 0, said so.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from inferlab.errors import ConfigError
from inferlab.profile.sameserver import count_problems, refuse_mismatch, same_model
from inferlab.sim.predict import measure_overhead
from inferlab.sim.steptime.base import StepModel
from inferlab.sim.steptime.choice import EngineBaseline, StepChoice, llama_knobs
from inferlab.sim.steptime.engine import EngineStepTime, fit_engine


def check_same_server(engine: EngineBaseline, c: StepChoice) -> None:
    """Refuse (unless forced) a baseline of another model or thread count than the server."""
    eb, run = engine.bench, engine.served
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


def engine_model(c: StepChoice) -> StepModel | None:
    """The engine-baseline step-time model and its description, or None without a baseline."""
    if c.engine is None:
        return None
    check_same_server(c.engine, c)
    run, over = c.engine.served, c.engine.serving_overhead_s
    if over is not None and not (math.isfinite(over) and over >= 0):
        raise ConfigError("{serving_overhead_s} must be a finite time >= 0, e.g. 2ms")
    how = "stated (--serving-overhead)" if over is not None else ""
    knobs = llama_knobs(c)
    model = EngineStepTime(fit_engine(c.engine.bench), over or 0.0, knobs.n_ubatch, c.force, how)
    if run is not None and over is None:
        labels = list(c.calibrate_levels) if c.calibrate_levels else None
        value, how = measure_overhead(model, knobs, run, labels)
        model = dataclasses.replace(model, serving_overhead_s=value, overhead_source=how)
    return StepModel(model, describe(model, c.engine.label))


def describe(model: EngineStepTime, label: str) -> dict[str, object]:
    f = model.fit
    return {
        "step_time_model": "engine baseline",
        "engine_baseline": label,
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
