"""The simulator's flags, shared by `simulate` and `plan`: model and hardware, step time,
scheduler, limits and the engine baseline; each read once into sim/'s typed choices."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.argtypes import BYTES, TIME, real
from inferlab.commands.common import add_hardware, add_model, resolve_cost, resolve_hardware

if TYPE_CHECKING:
    from inferlab.sim.limits import Limits
    from inferlab.sim.scheduler import Policy
    from inferlab.sim.stepmodel import PolicyChoice, StepChoice, StepModel


def add_sim_args(p: argparse.ArgumentParser) -> None:
    """Model, hardware, step-time model, scheduler and limit flags."""
    from inferlab.sim.limits import DEFAULT_MAX_REQUESTS, DEFAULT_MAX_STEPS
    from inferlab.sim.policies import POLICIES

    add_model(p)
    add_hardware(p)
    p.add_argument(
        "--policy",
        choices=list(POLICIES),
        help="the scheduler: sequential, static batches, continuous batching, or "
        "llama-server's slots (continuous; llama.cpp with --profile)",
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


def add_engine_args(p: argparse.ArgumentParser) -> None:
    from inferlab.sim.baseline import LLAMA_KNOBS

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
    """What the flags state about the step time (an engine baseline read here, at the edge)."""
    from inferlab.engines.llama_bench import load_engine_bench
    from inferlab.errors import InferlabError
    from inferlab.profile.record import load_profile
    from inferlab.sim.baseline import LLAMA_KNOBS, baseline_path
    from inferlab.sim.stepmodel import StepChoice

    path = baseline_path(args.engine_baseline, args.calibrate)
    if args.profile is not None and (path is not None or args.calibrate is not None):
        raise InferlabError("--profile is the step time: drop --engine-baseline, --calibrate")
    if args.step_scale is not None and args.profile is None:
        raise InferlabError("--step-scale scales a served profile's costs: add --profile DIR")
    given = tuple((k.attr, getattr(args, k.attr)) for k in LLAMA_KNOBS)
    return StepChoice(
        efficiency=args.efficiency,
        overhead_s=args.overhead,
        calibrate=args.calibrate,
        calibrate_levels=tuple(args.calibrate_levels.split(",")) if args.calibrate_levels else None,
        engine_baseline=path,
        baseline=load_engine_bench(path) if path is not None else None,
        served_run=args.calibrate if args.engine_baseline is not None else None,
        serving_overhead_s=args.serving_overhead,
        threads=args.threads,
        force=args.force,
        model_name=args.model,
        knobs=tuple((a, v) for a, v in given if v is not None),
        profile_path=args.profile,
        profile=load_profile(args.profile) if args.profile is not None else None,
        step_scale=args.step_scale or 1.0,
    )


def policy_choice(args: argparse.Namespace) -> PolicyChoice:
    from inferlab.sim.stepmodel import PolicyChoice

    return PolicyChoice(
        args.policy, args.max_batch, args.chunked_prefill, args.kv_capacity, args.block_tokens
    )


def limits_from(args: argparse.Namespace) -> Limits:
    from inferlab.sim.limits import Limits, at_least

    return Limits(
        at_least(args.max_requests, 1, "--max-requests"),
        at_least(args.max_steps, 1, "--max-steps"),
    )


def model_and_policy(args: argparse.Namespace) -> tuple[StepChoice, StepModel, Policy]:
    """What was stated, the step-time model and the scheduler it chooses (sim/stepmodel.py)."""
    from inferlab.sim.stepmodel import choose_policy, choose_step_model

    step = step_choice(args)
    sm = choose_step_model(step, lambda: (resolve_cost(args), resolve_hardware(args)))
    return step, sm, choose_policy(policy_choice(args), step, sm)
