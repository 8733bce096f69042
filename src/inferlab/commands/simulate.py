"""`inferlab simulate`: what a scheduler does to every user's latency, from the physics or a fit."""

from __future__ import annotations

import argparse
import random
import sys
import time
from contextlib import nullcontext, redirect_stdout
from pathlib import Path
from typing import Any

from inferlab.commands.common import (
    BYTES,
    RATE,
    TIME,
    add_hardware,
    add_model,
    resolve_cost,
    resolve_hardware,
)
from inferlab.errors import InferlabError


def add_sim_args(p: argparse.ArgumentParser) -> None:
    """Model, hardware, step-time model and scheduler flags, shared with `plan`."""
    add_model(p)
    add_hardware(p)
    p.add_argument("--policy", choices=["sequential", "static", "continuous"], default="continuous")
    p.add_argument("--max-batch", type=int, default=256, help="sequences per step (256)")
    p.add_argument("--chunked-prefill", type=int, help="prompt tokens per step (chunked prefill)")
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
    p.add_argument("--overhead", type=TIME, default=0.0, help="fixed per-step overhead, e.g. 1ms")
    p.add_argument("--calibrate", type=Path, help="fit the step time to a bench run folder")
    p.add_argument("--calibrate-levels", help="levels to fit, e.g. c=1,c=8 (all)")
    p.add_argument("--seed", type=int, default=0)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("simulate", help="simulate a serving scheduler under a load")
    add_sim_args(p)
    g = p.add_argument_group("load")
    g.add_argument("--users", type=int, help="closed loop: this many users, back to back")
    g.add_argument("--requests-per-user", type=int, default=1)
    g.add_argument(
        "--stagger",
        type=TIME,
        default=0.0,
        help="spread the users' first requests over this window (0: all at once)",
    )
    g.add_argument("--rate", type=RATE, help="open loop: arrivals per second, e.g. 5/s")
    g.add_argument("--arrival", choices=["poisson", "gamma"], default="poisson")
    g.add_argument("--gamma-shape", type=float, default=0.5, help="< 1 is burstier (0.5)")
    g.add_argument("--duration", type=TIME, default=60.0, help="open-loop duration, e.g. 10min")
    g.add_argument("--trace", type=Path, help="replay a JSONL trace instead")
    g.add_argument("--prompt-tokens", default="32", help="N, LOW:HIGH or a file of lengths")
    g.add_argument("--output-tokens", default="256", help="N, LOW:HIGH or a file of lengths")
    g.add_argument(
        "--inject-prompt",
        action="append",
        default=[],
        help="a one-off request, TOKENS@TIME, e.g. 8000@2s (repeatable)",
    )
    p.add_argument("--out", type=Path, help="write records.jsonl + summary.json here")
    p.add_argument("--json", action="store_true", help="print summary.json")
    p.set_defaults(run=run)


def build_model(args: argparse.Namespace) -> tuple[Any, dict[str, Any], Any, Any]:
    """The step-time model (fitted or roofline), its description, the cost and hardware."""
    from inferlab.sim.calibrate import fit_from_summary
    from inferlab.sim.steptime import RooflineStepTime

    if args.calibrate:
        from inferlab.commands.report import load_summary

        labels = args.calibrate_levels.split(",") if args.calibrate_levels else None
        fitted = fit_from_summary(load_summary(args.calibrate), labels)
        desc = {
            "step_time_model": "fitted",
            "base_s": fitted.base_s,
            "per_decode_s": fitted.per_decode_s,
            "per_prefill_token_s": fitted.per_prefill_token_s,
            "source": fitted.source,
        }
        return fitted, desc, None, None
    cost, hw = resolve_cost(args), resolve_hardware(args)
    if not 0 < args.efficiency <= 1:
        raise InferlabError("--efficiency must be in (0, 1]")
    desc = {
        "step_time_model": "roofline",
        "efficiency": args.efficiency,
        "overhead_s": args.overhead,
        "model": cost.name,
        "hardware": hw.name,
    }
    return RooflineStepTime(cost, hw, args.efficiency, args.overhead), desc, cost, hw


def build_policy(args: argparse.Namespace, cost: Any, hw: Any) -> Any:
    from inferlab.physics.capacity import capacity
    from inferlab.sim.engine import Policy

    cap = args.kv_capacity
    if cap is None and cost is not None and hw is not None and hw.memory_bytes > 0:
        cap = capacity(cost, hw, context=0).free_for_kv_bytes  # memory - weights
        if cap <= 0:
            raise InferlabError("the weights do not fit in memory: add --tp or state --memory")
    tokens = None
    if cap is not None and cost is not None and cost.kv_bytes_per_token > 0:
        tokens = int(cap // cost.kv_bytes_per_token)
    if args.max_batch < 1 or (args.chunked_prefill is not None and args.chunked_prefill < 1):
        raise InferlabError("--max-batch and --chunked-prefill must be >= 1")
    chunk = args.chunked_prefill
    if chunk is None and args.calibrate:
        from inferlab.sim.calibrate import LLAMA_CPP_BATCH_TOKENS

        chunk = LLAMA_CPP_BATCH_TOKENS  # the fit assumed prompts ride in the decode batch
    return Policy(args.policy, args.max_batch, chunk, tokens, args.block_tokens)


def run(args: argparse.Namespace) -> int:
    from inferlab.sim.engine import simulate
    from inferlab.sim.output import build_summary, to_records, write_records
    from inferlab.sim.workload import Lengths, open_loop, parse_inject, read_trace

    model, desc, cost, hw = build_model(args)
    policy = build_policy(args, cost, hw)
    prompt, output = Lengths.parse(args.prompt_tokens), Lengths.parse(args.output_tokens)
    rng = random.Random(args.seed)
    arrivals = [parse_inject(x, output.low) for x in args.inject_prompt]
    users = 0
    if args.trace:
        arrivals += read_trace(args.trace)
        kind, value, label = "rate", 0.0, "trace"
    elif args.rate is not None:
        arrivals += open_loop(
            args.rate, args.duration, prompt, output, rng, args.arrival, args.gamma_shape
        )
        kind, value, label = "rate", args.rate, f"rate={args.rate:g}/s"
    elif args.users:
        users = args.users
        kind, value, label = "concurrency", float(users), f"users={users}"
    else:
        raise InferlabError("give a load: --users N, --rate R/s or --trace FILE")
    t = time.perf_counter()
    res = simulate(
        arrivals,
        model,
        policy,
        users=users,
        user_requests=args.requests_per_user,
        user_output=output.low,
        user_prompt=prompt.low,
    )
    wall = time.perf_counter() - t
    records = to_records(res, label)
    config = {
        **desc,
        "policy": policy.name,
        "max_batch": policy.max_batch,
        "chunk_tokens": policy.chunk_tokens,
        "kv_capacity_tokens": policy.kv_capacity_tokens,
        "block_tokens": policy.block_tokens,
        "seed": args.seed,
        "wall_s": wall,
        "workload": {
            "prompt_tokens": prompt.low,
            "output_tokens": output.low,
            "prompt_tokens_range": [prompt.low, prompt.high],
            "output_tokens_range": [output.low, output.high],
            "requests_per_level": len(records),
            "users": users,
            "injected": args.inject_prompt,
        },
    }
    summary = build_summary(res, label, kind, value, records, config, ["inferlab", *sys.argv[1:]])
    # --json: stdout holds the JSON alone; the text result goes to stderr.
    with redirect_stdout(sys.stderr) if args.json else nullcontext():
        print_result(summary, res, records, wall)
    if args.out:
        from inferlab.jsonio import write_json

        args.out.mkdir(parents=True, exist_ok=True)
        write_records(args.out / "records.jsonl", records)
        write_json(args.out / "summary.json", summary)
        print(
            f"results: {args.out}/ (records.jsonl, summary.json); `inferlab report {args.out}`",
            file=sys.stderr if args.json else sys.stdout,
        )
    if args.json:
        from inferlab.jsonio import dumps

        print(dumps(summary))
    return 0


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.1f} ms"


def print_result(summary: dict[str, Any], res: Any, records: list[Any], wall: float) -> None:
    from inferlab.metrics.requests import latency

    lv = summary["levels"][0]
    sim = summary["simulation"]
    print(
        f"{sim['policy']} scheduler, {sim['step_time_model']} step time; "
        f"{len(records)} requests, {res.steps} steps, {res.sim_time_s:.2f} s simulated in "
        f"{wall:.2f} s"
    )
    print(
        f"  TTFT  p50 {ms(lv['ttft_s']['p50'])}  p99 {ms(lv['ttft_s']['p99'])}  "
        f"max {ms(lv['ttft_s']['max'])}"
    )
    print(f"  TPOT  p50 {ms(lv['tpot_s']['p50'])}  p99 {ms(lv['tpot_s']['p99'])}")
    print(f"  E2E   p50 {ms(lv['e2e_s']['p50'])}  max {ms(lv['e2e_s']['max'])}")
    print(
        f"  gaps  p50 {ms(lv['gap_s']['p50'])}  p99 {ms(lv['gap_s']['p99'])}  "
        f"max {ms(lv['gap_s']['max'])}  stalls {lv['stall_count']}"
    )
    print(
        f"  throughput {lv['output_tokens_per_s_total']:.1f} tok/s, "
        f"{lv['output_tokens_per_s_per_user']:.1f} tok/s per user; "
        f"preemptions {res.preemptions}"
    )
    injected = [(rec, r) for rec, r in zip(records, res.requests, strict=True) if r.injected]
    gap_p50 = lv["gap_s"]["p50"] or 0.0
    for rec, r in injected:
        lat = latency(rec)
        if lat is not None:
            print(
                f"  injected {r.prompt_tokens}-token prompt at {r.arrival_s:g} s: "
                f"TTFT {ms(lat.ttft_s)}"
            )
    if injected and gap_p50:
        worst = lv["gap_s"]["max"]
        print(
            f"  longest gap any stream saw: {ms(worst)} = {worst / gap_p50:.1f} median steps "
            f"(stall of ~{(worst - gap_p50) / gap_p50:.0f} decode steps)"
        )
