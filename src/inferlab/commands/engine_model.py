"""Flags and checks for the step time fitted to an engine-bench folder, and the llama.cpp policy.

One flag group, shared by `simulate` and `plan`: `--engine-baseline DIR` (or a
`--calibrate` that names an engine-bench folder), `--serving-overhead`, `--force`,
`--threads`, and the llama.cpp policy's knobs (from the policy's own registry).
The baseline supplies the model and the thread count; a served run or flags that
name another refuse unless --force. A batch past 2x the largest measured one is
refused unless --force; one past the largest is extrapolated, and said so.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.commands.common import TIME
from inferlab.errors import InferlabError

if TYPE_CHECKING:
    from inferlab.engine_result import EngineBench
    from inferlab.sim.policies.llamacpp import LlamaCppKnobs
    from inferlab.sim.scheduler import Policy
    from inferlab.sim.steptime_engine import EngineStepTime
    from inferlab.summary import RunSummary

RESULT_NAME = "engine_bench.json"  # engines.llama_bench.RESULT_NAME, without importing it early


def add_engine_args(p: argparse.ArgumentParser) -> None:
    from inferlab.sim.policies.llamacpp import KNOBS

    g = p.add_argument_group("engine baseline (step time fitted to `inferlab engine-bench`)")
    g.add_argument(
        "--engine-baseline",
        type=Path,
        help="an engine-bench folder: step time from the engine's own measurements "
        "(supplies the model and threads: no --model needed)",
    )
    g.add_argument(
        "--serving-overhead",
        type=TIME,
        help="per-step serving overhead beside the engine baseline, e.g. 2ms "
        "(or --calibrate RUN measures it; 0 if neither)",
    )
    g.add_argument("--threads", type=int, help="the served engine's threads (checked)")
    g.add_argument(
        "--force",
        action="store_true",
        help="use a baseline of another model or thread count, or batches past 2x its largest",
    )
    for k in KNOBS:  # None when not given: the policy's own default, and misuse is seen
        g.add_argument(k.flag, type=int, help=k.help)


def is_engine_folder(path: Path | None) -> bool:
    return path is not None and (
        (path / RESULT_NAME).is_file() if path.is_dir() else path.name == RESULT_NAME
    )


def baseline_path(args: argparse.Namespace) -> Path | None:
    """The engine baseline: --engine-baseline, or a --calibrate naming an engine-bench folder."""
    if args.engine_baseline is not None:
        return Path(args.engine_baseline)
    return args.calibrate if is_engine_folder(args.calibrate) else None


def served_run(args: argparse.Namespace) -> Path | None:
    """A served run to measure the overhead from: --calibrate beside --engine-baseline."""
    if args.engine_baseline is not None and args.calibrate is not None:
        return Path(args.calibrate)
    return None


def knobs(args: argparse.Namespace) -> LlamaCppKnobs:
    from inferlab.sim.policies.llamacpp import KNOBS, LlamaCppKnobs

    given = {k.attr: getattr(args, k.attr) for k in KNOBS if getattr(args, k.attr) is not None}
    return LlamaCppKnobs(**given)


def check_same_server(eb: EngineBench, args: argparse.Namespace, run: RunSummary | None) -> None:
    """Refuse (unless --force) a baseline of another model or thread count than the server."""
    problems = []
    base = Path(eb.gguf).name
    if args.model and args.model.endswith(".gguf") and Path(args.model).name != base:
        problems.append(f"--model {args.model} is not the baseline's model {base}")
    threads = args.threads
    if run is not None:
        named = [run.server.model or "", run.floor.model if run.floor else ""]
        stem = Path(base).stem.lower()
        if any(named) and not any(stem in n.lower() or n.lower() in stem for n in named if n):
            served = ", ".join(filter(None, named))
            problems.append(f"the served run's model ({served}) is not {base}")
        threads = threads or run.extra.get("server_threads")  # the demo records it
    if threads is not None and threads != eb.threads:
        problems.append(f"the server uses {threads} thread(s), the baseline {eb.threads}")
    if problems and not args.force:
        raise InferlabError(
            f"engine baseline {eb.gguf} ({eb.threads} threads): {'; '.join(problems)}; "
            "measure the same model and threads, or add --force"
        )


def load_baseline(path: Path) -> EngineBench:
    from inferlab.engines.llama_bench import load_engine_bench

    return load_engine_bench(path)


def engine_model(args: argparse.Namespace) -> tuple[EngineStepTime, dict[str, Any]] | None:
    """The engine-baseline step-time model and its description, or None without a baseline."""
    path = baseline_path(args)
    if path is None:
        return None
    import dataclasses

    from inferlab.sim.steptime_engine import EngineStepTime, fit_engine

    eb = load_baseline(path)
    run_path = served_run(args)
    run = _load_run(run_path) if run_path is not None else None
    check_same_server(eb, args, run)
    over = args.serving_overhead
    if over is not None and not (math.isfinite(over) and over >= 0):
        raise InferlabError("--serving-overhead must be a finite time >= 0, e.g. 2ms")
    model = EngineStepTime(
        fit_engine(eb),
        over or 0.0,
        knobs(args).n_ubatch,
        args.force,
        "stated (--serving-overhead)" if over is not None else "",
    )
    if run is not None and over is None:
        from inferlab.sim.predict import measure_overhead

        labels = args.calibrate_levels.split(",") if args.calibrate_levels else None
        value, how = measure_overhead(model, knobs(args), run, labels)
        model = dataclasses.replace(model, serving_overhead_s=value, overhead_source=how)
    return model, describe(model, path)


def _load_run(path: Path) -> RunSummary:
    from inferlab.commands.report import load_summary

    return load_summary(path)


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


def llama_policy(args: argparse.Namespace) -> Policy | None:
    """--policy llama.cpp: its knobs, as llama-server's; None for another policy (whose
    command line may not name them)."""
    from inferlab.sim.policies.llamacpp import KNOBS

    if args.policy == "llama.cpp":
        return knobs(args).policy()
    named = [k.flag for k in KNOBS if getattr(args, k.attr) is not None]
    if named:
        raise InferlabError(f"{', '.join(named)} apply to --policy llama.cpp only")
    return None


def largest_batch(policy: Policy, users: int | None) -> int:
    """The largest batch a simulation can run: slots, --max-batch, or the closed loop's users."""
    return min(policy.max_batch, users) if users else policy.max_batch


def check_batches(model: Any, policy: Policy, users: int | None) -> list[str]:
    """Refuse a batch past the model's limit up front; the lines that state the fit."""
    from inferlab.sim.steptime_engine import EngineStepTime

    if not isinstance(model, EngineStepTime):
        return []
    most = largest_batch(policy, users)
    model.check_batch(most)
    return model.describe(most)
