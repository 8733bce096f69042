"""The simulator's flags, shared by `simulate` and `plan`: model and hardware, step time,
scheduler, limits and the engine baseline; each read once into sim/'s typed choices."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.commands.flags.argtypes import BYTES, TIME, real
from inferlab.commands.flags.common import add_hardware, add_model, resolve_cost, resolve_hardware

if TYPE_CHECKING:
    from inferlab.sim.limits import Limits
    from inferlab.sim.scheduler import Policy
    from inferlab.sim.steptime.base import StepModel
    from inferlab.sim.steptime.choice import PolicyChoice, StepChoice


def add_sim_args(p: argparse.ArgumentParser) -> None:
    """Model, hardware, step-time model, scheduler and limit flags."""
    from inferlab.sim.limits import DEFAULT_MAX_REQUESTS, DEFAULT_MAX_STEPS
    from inferlab.sim.policies import POLICIES

    add_model(p)
    add_hardware(p)
    p.add_argument(
        "--policy",
        choices=list(POLICIES),
        help="the scheduler: sequential, static batches, continuous batching, "
        "llama-server's slots (llama.cpp), or vLLM's V1 scheduler (vllm) (continuous; "
        "llama.cpp with --profile)",
    )
    p.add_argument("--max-batch", type=int, default=256, help="sequences per step (256)")
    p.add_argument(
        "--chunked-prefill", type=int, help="prompt tokens per step (continuous policy only)"
    )
    p.add_argument(
        "--kv-capacity",
        type=BYTES,
        help="KV cache bytes (default: memory - weights; 'inf' not allowed)",
    )
    p.add_argument("--block-tokens", type=int, default=16, help="KV block size in tokens (16)")
    p.add_argument(
        "--efficiency",
        type=float,
        default=1.0,
        help="fraction of the floor's speed reached, e.g. 0.7 (1.0 = the floor)",
    )
    p.add_argument(
        "--overhead", type=TIME, default=0.0, help="fixed per-step overhead, e.g. 1ms (0)"
    )
    p.add_argument("--calibrate", type=Path, help="fit the step time to a bench run folder")
    p.add_argument("--calibrate-levels", help="levels to fit, e.g. c=1,c=8 (all)")
    p.add_argument(
        "--max-requests",
        type=int,
        default=DEFAULT_MAX_REQUESTS,
        help=f"refuse a simulation of more requests ({DEFAULT_MAX_REQUESTS})",
    )
    p.add_argument(
        "--max-steps",
        type=int,
        default=DEFAULT_MAX_STEPS,
        help=f"stop a simulation past this many engine steps ({DEFAULT_MAX_STEPS})",
    )
    add_engine_args(p)
    add_vllm_args(p)


def add_vllm_args(p: argparse.ArgumentParser) -> None:
    """vLLM's knobs, as vLLM names its flags (--policy vllm only; default: its CPU build's)."""
    from inferlab.sim.policies.vllm_knobs import VLLM_KNOBS

    g = p.add_argument_group("vLLM's scheduler (--policy vllm; vLLM's own flag names)")
    for k in VLLM_KNOBS:  # None when not given: the policy's own default, and misuse is seen
        if k.kind == "bool":
            g.add_argument(k.flag, action=argparse.BooleanOptionalAction, help=k.help)
        else:
            g.add_argument(k.flag, type=int, help=k.help)


def add_engine_args(p: argparse.ArgumentParser) -> None:
    from inferlab.sim.steptime.choice import LLAMA_KNOBS

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
    g.add_argument(
        "--profile",
        type=Path,
        help="an `inferlab profile` folder: the served engine's step time and per-request "
        "costs, llama-server's scheduler at its slots (supplies the model: no --model needed)",
    )
    g.add_argument(
        "--step-scale",
        type=real(0.1, 10.0),
        help="what if: every step and per-request cost of --profile times X (1.1: the "
        "machine 10%% slower than when profiled; the profile's spread line says how far its "
        "speed moved while profiled) (1)",
    )
    g.add_argument("--threads", type=int, help="the served engine's threads (checked)")
    g.add_argument(
        "--force",
        action="store_true",
        help="use a baseline or profile of another model, thread count or --parallel, or "
        "batches past 2x its largest",
    )
    for k in LLAMA_KNOBS:  # None when not given: the policy's own default, and misuse is seen
        g.add_argument(k.flag, type=int, help=k.help)


def step_choice(args: argparse.Namespace) -> StepChoice:
    """What the flags state about the step time, every file they name read here, at the edge
    (the engine baseline, the bench run, the profile): the chooser reads none."""
    from inferlab.engines.llama_bench import RESULT_NAME, load_engine_bench
    from inferlab.errors import InferlabError
    from inferlab.metrics.runfolder import load_summary
    from inferlab.profile.record import load_profile
    from inferlab.sim.steptime.choice import LLAMA_KNOBS, EngineBaseline, ServedProfile, StepChoice

    cal, path = args.calibrate, args.engine_baseline
    if path is None and cal is not None:  # a --calibrate may name an engine-bench folder
        engine_folder = (cal / RESULT_NAME).is_file() if cal.is_dir() else cal.name == RESULT_NAME
        path = cal if engine_folder else None
    if args.profile is not None and (path is not None or cal is not None):
        raise InferlabError("--profile is the step time: drop --engine-baseline, --calibrate")
    if args.step_scale is not None and args.profile is None:
        raise InferlabError("--step-scale scales a served profile's costs: add --profile DIR")
    engine = profile = None
    if path is not None:  # a --calibrate beside --engine-baseline is the served run
        bench = load_engine_bench(path)
        served = load_summary(cal) if cal is not None and args.engine_baseline is not None else None
        engine = EngineBaseline(bench, str(path), served, args.serving_overhead)
    if args.profile is not None:
        profile = ServedProfile(
            load_profile(args.profile), str(args.profile), args.step_scale or 1.0
        )
    given = tuple((k.attr, getattr(args, k.attr)) for k in LLAMA_KNOBS)
    return StepChoice(
        efficiency=args.efficiency,
        overhead_s=args.overhead,
        calibrate=str(cal) if cal is not None else None,
        calibration=load_summary(cal) if cal is not None and path is None else None,
        calibrate_levels=tuple(args.calibrate_levels.split(",")) if args.calibrate_levels else None,
        engine=engine,
        profile=profile,
        threads=args.threads,
        force=args.force,
        model_name=args.model,
        knobs=tuple((a, v) for a, v in given if v is not None),
    )


def policy_choice(args: argparse.Namespace) -> PolicyChoice:
    from inferlab.sim.policies.vllm_knobs import VLLM_KNOBS
    from inferlab.sim.steptime.choice import PolicyChoice

    given = ((k.attr, getattr(args, k.attr)) for k in VLLM_KNOBS)
    return PolicyChoice(
        args.policy,
        args.max_batch,
        args.chunked_prefill,
        args.kv_capacity,
        args.block_tokens,
        tuple((a, int(v)) for a, v in given if v is not None),
    )


def limits_from(args: argparse.Namespace) -> Limits:
    from inferlab.sim.limits import Limits, at_least

    return Limits(
        at_least(args.max_requests, 1, "max_requests"),
        at_least(args.max_steps, 1, "max_steps"),
    )


def model_and_policy(args: argparse.Namespace) -> tuple[StepChoice, StepModel, Policy]:
    """What was stated, the step-time model and the scheduler it chooses (sim/steptime/)."""
    from inferlab.sim.steptime.chooser import choose_policy, choose_step_model

    step = step_choice(args)
    sm = choose_step_model(step, lambda: (resolve_cost(args), resolve_hardware(args)))
    return step, sm, choose_policy(policy_choice(args), step, sm)
