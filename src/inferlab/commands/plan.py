"""`inferlab plan`: replicas and GPUs for a load under a latency SLO, and the price."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING

from inferlab.commands.flags.argtypes import RATE, TIME
from inferlab.commands.flags.load import LoadDefaults, add_load_flags, load_from_args
from inferlab.commands.flags.sim import add_sim_args, limits_from, model_and_policy
from inferlab.slo.search import DEFAULT_MAX_LEVELS

if TYPE_CHECKING:  # the simulator (numpy) loads only when the verb runs
    from inferlab.sim.simulate_level import SimConfig
    from inferlab.sim.steptime.choice import StepChoice

# plan searches the rate itself: lengths, arrival process, prefixes and seed only.
PLAN_LOAD = LoadDefaults(prompt_tokens="1000", output_tokens="300", levels=False)


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
        help=f"simulated rates at most ({DEFAULT_MAX_LEVELS}; as bench's and simulate's search)",
    )
    p.add_argument("--gpu-hour", type=float, help="$ per GPU-hour, for the price")
    p.add_argument(
        "--sim-duration", type=TIME, default=60.0, help="time simulated per rate, e.g. 60s (60s)"
    )
    p.add_argument(
        "--json", action="store_true", help="print the plan as JSON (only) on stdout (off)"
    )
    p.add_argument("--explain", action="store_true", help="print the chain of reasoning")
    p.set_defaults(run=run)


def config_from(args: argparse.Namespace) -> tuple[StepChoice, SimConfig]:
    """The flags, read once into the simulation each candidate rate runs."""
    from inferlab.sim.capacity_plan import plan_config
    from inferlab.sim.limits import at_least, positive_finite
    from inferlab.sim.simulate_level import SimConfig
    from inferlab.slo.grammar import parse_slo
    from inferlab.slo.search import SearchSpec

    slo = parse_slo(args.slo, args.min_attainment)
    at_least(args.search_max_levels, 1, "search_max_levels", 64)
    duration = positive_finite(args.sim_duration, "sim_duration_s", "60s (time simulated per rate)")
    positive_finite(args.rate, "rate", "50/s")
    if args.gpu_hour is not None:
        positive_finite(args.gpu_hour, "gpu_hour", "3 ($ per GPU-hour)")
    limits = limits_from(args)
    step, sm, policy = model_and_policy(args)
    workload = load_from_args(args, PLAN_LOAD)
    limits.check_request_steps(*workload.longest_tokens(), policy.chunk_tokens)
    spec = SearchSpec("rate", max_levels=args.search_max_levels)
    cfg = SimConfig(sm.model, policy, workload, slo=slo, limits=limits, search=spec, costs=sm.costs)
    return step, plan_config(replace(cfg, description=sm.description), duration)


def run(args: argparse.Namespace) -> int:
    from inferlab.console import plan_text as say
    from inferlab.jsonio import dumps
    from inferlab.sim.capacity_plan import Fleet, plan_fleet, plan_json
    from inferlab.sim.steptime.ranges import check_batches

    step, cfg = config_from(args)
    fit_lines = check_batches(cfg.model, cfg.policy, None)  # a rate: refused by a batch reached
    lines: list[str] = []
    fleet = Fleet(args.tp, args.gpu_hour)
    plan = plan_fleet(cfg, args.rate, fleet, lambda r: lines.append(say.rate_line(r)))
    if args.json:
        assert cfg.slo is not None
        d = plan_json(plan, args.rate, cfg.slo)
        d["step_time"] = cfg.description
        d["basis"] = step.basis
        print(dumps(d))
        return 0
    if args.explain:
        say.steps(cfg, fit_lines, lines)
        say.explain(plan, args.rate, fleet, step)
    else:  # what the engine baseline assumes beyond its measurements is said, explained or not
        said = [x for x in fit_lines if "beyond the" in x or "none given" in x]
        for line in said:
            print(f"step time: {line.strip()}")
    say.answer(plan, args.rate, fleet, step)
    return 0
