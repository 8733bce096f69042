"""`inferlab plan`: replicas and GPUs for a load under a latency SLO, and the price."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from inferlab.commands.common import RATE
from inferlab.commands.simulate import add_sim_args, build_limits, build_model, build_policy
from inferlab.errors import InferlabError

if TYPE_CHECKING:  # the simulator (numpy) loads only when the verb runs
    from inferlab.sim.plan import Plan, RatePoint
from inferlab.units import parse_time


def parse_slo(text: str) -> tuple[float | None, float | None]:
    """'ttft_p99=1s,tpot_p99=50ms' -> (1.0, 0.05)."""
    ttft = tpot = None
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip().lower()
        if key not in ("ttft_p99", "tpot_p99") or not value:
            raise InferlabError(f"cannot read SLO {part!r}: write ttft_p99=1s,tpot_p99=50ms")
        seconds = parse_time(value.strip())
        if key == "ttft_p99":
            ttft = seconds
        else:
            tpot = seconds
    return ttft, tpot


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("plan", help="fleet size for a request rate under an SLO, priced")
    add_sim_args(p)
    p.add_argument("--rate", type=RATE, required=True, help="target arrivals, e.g. 50/s")
    p.add_argument("--prompt-tokens", default="1000", help="N or LOW:HIGH (1000)")
    p.add_argument("--output-tokens", default="300", help="N or LOW:HIGH (300)")
    p.add_argument("--slo", required=True, help="e.g. ttft_p99=1s,tpot_p99=50ms")
    p.add_argument("--gpu-hour", type=float, help="$ per GPU-hour, for the price")
    p.add_argument("--sim-duration", type=float, default=60.0, help="seconds simulated per rate")
    p.add_argument("--json", action="store_true")
    p.add_argument("--explain", action="store_true", help="print the chain of reasoning")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from inferlab.jsonio import dumps
    from inferlab.sim.limits import positive_finite
    from inferlab.sim.plan import Fleet, PlanLoad, Search, Slo, plan_fleet, plan_json
    from inferlab.sim.workload import Lengths

    ttft, tpot = parse_slo(args.slo)
    duration = positive_finite(args.sim_duration, "--sim-duration", "60 (seconds per rate)")
    rate = positive_finite(args.rate, "--rate", "50/s")
    if args.gpu_hour is not None:
        positive_finite(args.gpu_hour, "--gpu-hour", "3 ($ per GPU-hour)")
    search = Search(duration, args.seed, build_limits(args))
    model, desc, cost, hw = build_model(args)
    policy = build_policy(args, cost, hw)
    from inferlab.commands.engine_model import check_batches

    fit_lines = check_batches(model, policy, None)  # an engine baseline's range, refused past 2x
    prompt, output = Lengths.parse(args.prompt_tokens), Lengths.parse(args.output_tokens)
    search.limits.check_request_steps(prompt.high, output.high, policy.chunk_tokens)
    lines: list[str] = []
    slo = Slo(ttft, tpot)

    def progress(r: RatePoint) -> None:
        v = r.violation(slo)
        lines.append(
            f"  {r.rate_per_s:9.3g} req/s: TTFT p99 {r.ttft_p99_s:.3g} s, "
            f"TPOT p99 {r.tpot_p99_s * 1e3:.3g} ms, preemptions {r.preemptions} "
            f"-> {'meets the SLO' if v is None else 'fails: ' + v}"
        )

    load = PlanLoad(rate, prompt, output)
    plan = plan_fleet(model, policy, slo, load, Fleet(args.tp, args.gpu_hour), search, progress)
    if args.json:
        d = plan_json(plan, rate, slo)
        d["step_time"] = desc
        print(dumps(d))
        return 0
    if args.explain:
        print(f"step time: {desc}")
        print("\n".join(f"  {line}" for line in fit_lines))
        print(
            f"policy: {policy.name}, max batch {policy.max_batch}, chunk {policy.chunk_tokens}, "
            f"KV capacity {policy.kv_capacity_tokens} tokens"
        )
        print("each rate below is one simulation of a Poisson load:")
        print("\n".join(lines))
        print_explain(plan, args)
    else:  # what the engine baseline assumes beyond its measurements is said, explained or not
        said = [x for x in fit_lines if "beyond the measured" in x or "none given" in x]
        print("\n".join(f"step time: {line.strip()}" for line in said))
    print_plan(plan, args)
    return 0


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
    print(
        f"one replica (TP {args.tp}) sustains {plan.max_rate_per_s:.3g} req/s within the SLO "
        f"(binding: {plan.binding})"
    )
    print(f"for {args.rate:g} req/s: {plan.replicas} replicas = {plan.gpus} GPUs")
    if plan.usd_per_million_output_tokens is not None:
        print(
            f"price: ${plan.usd_per_million_output_tokens:.3g} per million output tokens at "
            f"${args.gpu_hour:g}/GPU-hour"
        )
