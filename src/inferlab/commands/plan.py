"""`inferlab plan`: replicas and GPUs for a load under a latency SLO, and the price."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from inferlab.commands.common import RATE
from inferlab.commands.sim_args import add_sim_args, limits_from, model_and_policy
from inferlab.load.flags import LoadDefaults, add_load_flags, load_from_args
from inferlab.slo.search import DEFAULT_MAX_LEVELS
from inferlab.units import fmt_duration

if TYPE_CHECKING:  # the simulator (numpy) loads only when the verb runs
    from inferlab.sim.level import SimConfig
    from inferlab.sim.plan import Plan, RatePoint

# plan searches the rate itself: lengths, arrival process, prefixes and seed only.
PLAN_LOAD = LoadDefaults(prompt_tokens="1000", output_tokens="300", levels=False)


Basis = Literal["floor", "efficiency", "calibrated"]
FLOOR_NOTE = (
    "at the floor: an upper bound on what one replica sustains, so a lower bound on replicas"
)
CALIBRATE_HINT = (
    "to plan on a real server: bench it (`inferlab bench --url ... --out RUN`) and pass "
    "--calibrate RUN, or state --efficiency (real servers run at 0.25-0.5 of the floor)"
)


def basis_of(args: argparse.Namespace) -> Basis:
    """What the step time stands on: the measured run, a stated efficiency, or the floor."""
    if args.calibrate:
        return "calibrated"
    if args.efficiency != 1.0 or args.overhead:
        return "efficiency"
    return "floor"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("plan", help="fleet size for a request rate under an SLO, priced")
    add_sim_args(p)
    p.add_argument("--rate", type=RATE, required=True, help="target arrivals, e.g. 50/s")
    add_load_flags(p, PLAN_LOAD)
    p.add_argument("--slo", required=True, help="e.g. ttft_p99=1s,tpot_p99=50ms (as bench's)")
    p.add_argument(
        "--min-attainment",
        type=float,
        default=0.9,
        help="share of requests that must meet the per-request objectives (0.9)",
    )
    p.add_argument(
        "--search-max-levels",
        type=int,
        default=DEFAULT_MAX_LEVELS,
        help=f"simulated rates at most ({DEFAULT_MAX_LEVELS}, as bench's and simulate's search)",
    )
    p.add_argument("--gpu-hour", type=float, help="$ per GPU-hour, for the price")
    p.add_argument("--sim-duration", type=float, default=60.0, help="seconds simulated per rate")
    p.add_argument(
        "--json", action="store_true", help="print the plan as JSON (only) on stdout (off)"
    )
    p.add_argument("--explain", action="store_true", help="print the chain of reasoning")
    p.set_defaults(run=run)


def config_from(args: argparse.Namespace) -> SimConfig:
    """The flags, read once into the simulation each candidate rate runs."""
    from inferlab.sim.level import SimConfig
    from inferlab.sim.limits import at_least, positive_finite
    from inferlab.sim.plan import plan_config
    from inferlab.slo.grammar import parse_slo
    from inferlab.slo.search import SearchSpec

    slo = parse_slo(args.slo, args.min_attainment)
    at_least(args.search_max_levels, 1, "--search-max-levels", 64)
    duration = positive_finite(args.sim_duration, "--sim-duration", "60 (seconds per rate)")
    positive_finite(args.rate, "--rate", "50/s")
    if args.gpu_hour is not None:
        positive_finite(args.gpu_hour, "--gpu-hour", "3 ($ per GPU-hour)")
    limits = limits_from(args)
    sm, policy = model_and_policy(args)
    workload = load_from_args(args, PLAN_LOAD)
    limits.check_request_steps(*workload.longest_tokens(), policy.chunk_tokens)
    spec = SearchSpec("rate", max_levels=args.search_max_levels)
    cfg = SimConfig(sm.model, policy, workload, slo=slo, limits=limits, search=spec)
    return plan_config(replace(cfg, description=sm.description), duration)


def run(args: argparse.Namespace) -> int:
    from inferlab.jsonio import dumps
    from inferlab.sim.baseline import check_batches
    from inferlab.sim.plan import Fleet, plan_fleet, plan_json

    cfg = config_from(args)
    fit_lines = check_batches(cfg.model, cfg.policy, None)  # a baseline's range, refused past 2x
    lines: list[str] = []

    def progress(r: RatePoint) -> None:
        v = r.violation()
        lines.append(
            f"  {r.rate_per_s:9.3g} req/s: TTFT p99 {fmt_duration(r.ttft_p99_s)}, "
            f"TPOT p99 {fmt_duration(r.tpot_p99_s)}, preemptions {r.preemptions}, "
            f"{r.verdict} -> {'meets the SLO' if v is None else 'fails: ' + v}"
        )

    plan = plan_fleet(cfg, args.rate, Fleet(args.tp, args.gpu_hour), progress)
    if args.json:
        assert cfg.slo is not None
        d = plan_json(plan, args.rate, cfg.slo)
        d["step_time"] = cfg.description
        d["basis"] = basis_of(args)
        print(dumps(d))
        return 0
    if args.explain:
        print_steps(cfg, fit_lines, lines)
        print_explain(plan, args)
    else:  # what the engine baseline assumes beyond its measurements is said, explained or not
        said = [x for x in fit_lines if "beyond the measured" in x or "none given" in x]
        print("\n".join(f"step time: {line.strip()}" for line in said))
    print_plan(plan, args)
    return 0


def print_steps(cfg: SimConfig, fit_lines: list[str], lines: list[str]) -> None:
    """--explain: the step time and scheduler in words, then each simulated rate."""
    print("step time:")
    for k, v in cfg.description.items():
        print(f"  {k.removesuffix('_s').replace('_', ' ')}: {fmt_value(k, v)}")
    for line in fit_lines:
        print(f"  {line}")
    p = cfg.policy
    chunk = "whole prompts" if p.chunk_tokens is None else f"{p.chunk_tokens} tokens"
    kv = "unbounded" if p.kv_capacity_tokens is None else f"{p.kv_capacity_tokens:,} tokens"
    print(f"policy: {p.name}, max batch {p.max_batch}, prefill chunk {chunk}, KV capacity {kv}")
    arrival = cfg.workload.arrival if cfg.workload else "poisson"
    print(f"each rate below is one simulation of a {arrival} load:")
    print("\n".join(lines))


def fmt_value(key: str, v: object) -> str:
    """A step-time setting as a person reads it: times with their unit, lists joined."""
    if isinstance(v, float) and key.endswith("_s"):
        return fmt_duration(v)
    if isinstance(v, list):
        return ", ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def print_explain(plan: Plan, args: argparse.Namespace) -> None:
    print(
        f"highest rate within the SLO: {plan.max_rate_per_s:.3g} req/s per replica; "
        f"above it the binding constraint is {plan.binding}"
    )
    print(
        f"replicas = ceil({args.rate:g} / {plan.max_rate_per_s:.3g}) = {plan.replicas}; "
        f"GPUs = {plan.replicas} x TP {args.tp} = {plan.gpus}"
    )


def print_plan(plan: Plan, args: argparse.Namespace) -> None:
    basis = basis_of(args)
    print(
        f"one replica (TP {args.tp}) sustains {plan.max_rate_per_s:.3g} req/s within the SLO "
        f"(binding: {plan.binding})"
    )
    print(f"for {args.rate:g} req/s: {plan.replicas} replicas = {plan.gpus} GPUs")
    if basis == "floor":
        print(f"basis: {FLOOR_NOTE}; {CALIBRATE_HINT}")
    elif basis == "efficiency":
        print(f"basis: the floor slowed to --efficiency {args.efficiency:g} (stated, not measured)")
    else:
        print(f"basis: step times fitted to the measured run {args.calibrate}")
    if plan.usd_per_million_output_tokens is not None:
        print(
            f"price: ${plan.usd_per_million_output_tokens:.3g} per million output tokens at "
            f"${args.gpu_hour:g}/GPU-hour"
        )
