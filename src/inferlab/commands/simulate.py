"""`inferlab simulate`: what a scheduler does to every user's latency, from the physics or a fit."""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from inferlab.sim.limits import Limits
    from inferlab.sim.output import LoadLabel
    from inferlab.sim.scheduler import Policy
    from inferlab.sim.users import ClosedLoop
    from inferlab.sim.workload import Arrival, Lengths
    from inferlab.summary import LevelSummary, RunSummary, SimulationBlock


def add_sim_args(p: argparse.ArgumentParser) -> None:
    """Model, hardware, step-time model and scheduler flags, shared with `plan`."""
    from inferlab.sim.limits import DEFAULT_MAX_REQUESTS, DEFAULT_MAX_STEPS
    from inferlab.sim.policies import POLICIES

    add_model(p)
    add_hardware(p)
    p.add_argument("--policy", choices=list(POLICIES), default="continuous")
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
    p.add_argument("--overhead", type=TIME, default=0.0, help="fixed per-step overhead, e.g. 1ms")
    p.add_argument("--calibrate", type=Path, help="fit the step time to a bench run folder")
    p.add_argument("--calibrate-levels", help="levels to fit, e.g. c=1,c=8 (all)")
    p.add_argument("--seed", type=int, default=0)
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
    from inferlab.commands.engine_model import add_engine_args

    add_engine_args(p)


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
    p.add_argument("--overwrite", action="store_true", help="replace the run already in --out")
    p.add_argument(
        "--append-run", action="store_true", help="add this run beside one in --out (run-N/)"
    )
    p.add_argument("--json", action="store_true", help="print summary.json (only) on stdout")
    p.set_defaults(run=run)


def build_model(args: argparse.Namespace) -> tuple[Any, dict[str, Any], Any, Any]:
    """The step-time model (fitted or roofline), its description, the cost and hardware."""
    from inferlab.commands.engine_model import engine_model
    from inferlab.sim.calibrate import fit_from_summary
    from inferlab.sim.steptime import RooflineStepTime

    engine = engine_model(args)  # --engine-baseline DIR (or --calibrate naming one)
    if engine is not None:
        return engine[0], engine[1], None, None
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
        raise InferlabError("--efficiency must be in (0, 1], e.g. 0.7")
    if not math.isfinite(args.overhead):
        raise InferlabError("--overhead must be a finite time, e.g. 1ms")
    desc = {
        "step_time_model": "roofline",
        "efficiency": args.efficiency,
        "overhead_s": args.overhead,
        "model": cost.name,
        "hardware": hw.name,
    }
    return RooflineStepTime(cost, hw, args.efficiency, args.overhead), desc, cost, hw


def kv_capacity_tokens(args: argparse.Namespace, cost: Any, hw: Any) -> int | None:
    """Tokens the KV cache holds: --kv-capacity, else memory beside the weights (physics)."""
    from inferlab.physics.capacity import capacity

    cap = args.kv_capacity
    if cap is not None and not math.isfinite(cap):
        raise InferlabError("--kv-capacity must be a finite size, e.g. 60GB")
    if cap is None and cost is not None and hw is not None and hw.memory_bytes > 0:
        cap = capacity(cost, hw, 1).free_for_kv_bytes
        if cap <= 0:
            raise InferlabError("the weights do not fit in memory: add --tp or state --memory")
    if cap is None or cost is None or cost.kv_bytes_per_token <= 0:
        return None
    return int(cap // cost.kv_bytes_per_token)


def build_policy(args: argparse.Namespace, cost: Any, hw: Any) -> Policy:
    from inferlab.sim.limits import MAX_BLOCK_TOKENS, at_least
    from inferlab.sim.scheduler import Policy

    at_least(args.max_batch, 1, "--max-batch")
    at_least(args.block_tokens, 1, "--block-tokens", MAX_BLOCK_TOKENS)
    chunk = args.chunked_prefill
    if chunk is not None:
        at_least(chunk, 1, "--chunked-prefill")
        if args.policy != "continuous":
            raise InferlabError("--chunked-prefill applies to --policy continuous only")
    elif args.calibrate and args.policy == "continuous":
        from inferlab.sim.calibrate import LLAMA_CPP_BATCH_TOKENS

        chunk = LLAMA_CPP_BATCH_TOKENS  # the fit assumed prompts ride in the decode batch
    from inferlab.commands.engine_model import llama_policy

    llama = llama_policy(args)  # --policy llama.cpp and its knobs
    if llama is not None:
        return llama
    tokens = kv_capacity_tokens(args, cost, hw)
    return Policy(args.policy, args.max_batch, chunk, tokens, args.block_tokens)


def build_limits(args: argparse.Namespace) -> Limits:
    from inferlab.sim.limits import Limits, at_least

    return Limits(
        at_least(args.max_requests, 1, "--max-requests"),
        at_least(args.max_steps, 1, "--max-steps"),
    )


@dataclass(frozen=True, slots=True)
class Load:
    arrivals: list[Arrival]
    users: ClosedLoop | None
    label: LoadLabel


def build_load(args: argparse.Namespace, prompt: Lengths, output: Lengths, limits: Limits) -> Load:
    from inferlab.sim.limits import at_least, positive_finite
    from inferlab.sim.output import LoadLabel
    from inferlab.sim.users import ClosedLoop
    from inferlab.sim.workload import open_loop, parse_inject, read_trace

    arrivals = [parse_inject(x, output.low) for x in args.inject_prompt]
    if args.trace:
        arrivals += read_trace(args.trace)
        limits.check_requests(len(arrivals), f"the trace {args.trace}")
        return Load(arrivals, None, LoadLabel("trace", "rate", 0.0))
    if args.rate is not None:
        rate = positive_finite(args.rate, "--rate", "5/s")
        duration = positive_finite(args.duration, "--duration", "60s")
        limits.check_requests(rate * duration, f"--rate {rate:g}/s x --duration {duration:g}s")
        rng = random.Random(args.seed)
        arrivals += open_loop(rate, duration, prompt, output, rng, args.arrival, args.gamma_shape)
        return Load(arrivals, None, LoadLabel(f"rate={rate:g}/s", "rate", rate))
    if args.users is not None:
        users = at_least(args.users, 1, "--users")
        per_user = at_least(args.requests_per_user, 1, "--requests-per-user")
        if not 0 <= args.stagger < math.inf:
            raise InferlabError("--stagger must be a finite time >= 0, e.g. 2s")
        limits.check_requests(users * per_user, f"--users {users} x --requests-per-user {per_user}")
        loop = ClosedLoop(users, per_user, prompt.low, output.low, args.stagger)
        return Load(arrivals, loop, LoadLabel(f"users={users}", "concurrency", float(users)))
    raise InferlabError("give a load: --users N, --rate R/s or --trace FILE")


def check_lengths(
    load: Load, prompt: Lengths, output: Lengths, policy: Policy, limits: Limits
) -> None:
    """Refuse a request no simulation within --max-steps can finish."""
    longest = [(a.prompt_tokens, a.output_tokens) for a in load.arrivals]
    if load.label.label != "trace":  # a trace's lengths are its own
        longest.append((prompt.high, output.high))
    if not longest:
        return
    for p, o in (max(longest, key=lambda x: x[1]), max(longest, key=lambda x: x[0])):
        limits.check_request_steps(p, o, policy.chunk_tokens)


def sim_config(
    desc: dict[str, Any],
    policy: Policy,
    args: argparse.Namespace,
    load: Load,
    lengths: tuple[Lengths, Lengths],
) -> dict[str, Any]:
    prompt, output = lengths
    return {
        **desc,
        "policy": policy.name,
        "max_batch": policy.max_batch,
        "chunk_tokens": policy.chunk_tokens,
        "kv_capacity_tokens": policy.kv_capacity_tokens,
        "block_tokens": policy.block_tokens,
        "seed": args.seed,
        "workload": {
            "prompt_tokens": prompt.low,
            "output_tokens": output.low,
            "prompt_tokens_range": [prompt.low, prompt.high],
            "output_tokens_range": [output.low, output.high],
            "requests_per_level": len(load.arrivals)
            + (load.users.total_requests if load.users else 0),
            "users": load.users.users if load.users else 0,
            "injected": args.inject_prompt,
        },
    }


def run(args: argparse.Namespace) -> int:
    from inferlab.runfolder import resolve_run_folder
    from inferlab.sim.engine import simulate
    from inferlab.sim.output import TokenTimes, build_summary, summarize_result
    from inferlab.sim.workload import Lengths

    limits = build_limits(args)
    if args.out is not None:
        resolve_run_folder(args.out, args.overwrite, args.append_run)  # refuse before the work
    model, desc, cost, hw = build_model(args)
    policy = build_policy(args, cost, hw)
    prompt, output = Lengths.parse(args.prompt_tokens), Lengths.parse(args.output_tokens)
    load = build_load(args, prompt, output, limits)
    check_lengths(load, prompt, output, policy, limits)
    from inferlab.commands.engine_model import check_batches

    fit_lines = check_batches(model, policy, load.users.users if load.users else None)
    t = time.perf_counter()
    res = simulate(load.arrivals, model, policy, load.users, max_steps=limits.max_steps)
    wall = time.perf_counter() - t
    times = TokenTimes.of(res)
    config = {**sim_config(desc, policy, args, load, (prompt, output)), "wall_s": wall}
    config["workload"]["requests_per_level"] = len(res.requests)
    level = summarize_result(res, load.label, times)
    summary = build_summary(res, level, config, ["inferlab", *sys.argv[1:]])
    text = sys.stderr if args.json else sys.stdout  # --json: stdout carries the JSON alone
    print_result(level, summary.simulation, res, wall, text)
    for line in fit_lines:
        print(f"  step time: {line}", file=text)
    if args.out is not None:
        write_run(args, res, times, summary, text)
    if args.json:
        from inferlab.jsonio import dumps

        print(dumps(summary.to_json()))
    return 0


def write_run(
    args: argparse.Namespace, res: Any, times: Any, summary: RunSummary, text: IO[str]
) -> None:
    from inferlab.jsonio import write_json
    from inferlab.runfolder import claim_run_folder
    from inferlab.sim.output import iter_records, write_records

    with claim_run_folder(args.out, args.overwrite, args.append_run) as folder:
        label = summary.levels[0].label
        write_records(folder / "records.jsonl", iter_records(res, label, times))
        write_json(folder / "summary.json", summary)
    print(
        f"results: {folder}/ (records.jsonl, summary.json); `inferlab report {folder}`", file=text
    )


def ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.1f} ms"


def print_result(
    lv: LevelSummary, sim: SimulationBlock | None, res: Any, wall: float, file: IO[str]
) -> None:

    def say(line: str) -> None:
        print(line, file=file)

    say(
        f"{sim.policy if sim else '?'} scheduler, {sim.step_time_model if sim else '?'} step "
        "time; "
        f"{len(res.requests)} requests, {res.steps} steps, {res.sim_time_s:.2f} s simulated in "
        f"{wall:.2f} s"
    )
    say(f"  TTFT  p50 {ms(lv.ttft_s.p50)}  p99 {ms(lv.ttft_s.p99)}  max {ms(lv.ttft_s.max)}")
    say(f"  TPOT  p50 {ms(lv.tpot_s.p50)}  p99 {ms(lv.tpot_s.p99)}")
    say(f"  E2E   p50 {ms(lv.e2e_s.p50)}  max {ms(lv.e2e_s.max)}")
    say(
        f"  gaps  p50 {ms(lv.gap_s.p50)}  p99 {ms(lv.gap_s.p99)}  "
        f"max {ms(lv.gap_s.max)}  stalls {lv.stall_count}"
    )
    say(
        f"  throughput {lv.output_tokens_per_s_total:.1f} tok/s, "
        f"{lv.output_tokens_per_s_per_user:.1f} tok/s per user; "
        f"preemptions {res.preemptions}"
    )
    print_injected(lv, res, file)


def print_injected(lv: LevelSummary, res: Any, file: IO[str]) -> None:
    injected = [r for r in res.requests if r.injected]
    for r in injected:
        times = res.token_times(r)
        if r.finish_s is not None and times:
            print(
                f"  injected {r.prompt_tokens}-token prompt at {r.arrival_s:g} s: "
                f"TTFT {ms(times[0] - r.arrival_s)}",
                file=file,
            )
    gap_p50 = lv.gap_s.p50 or 0.0
    if injected and gap_p50:
        worst = lv.gap_s.max or 0.0
        print(
            f"  longest gap any stream saw: {ms(worst)} = {worst / gap_p50:.1f} median steps "
            f"(stall of ~{(worst - gap_p50) / gap_p50:.0f} decode steps)",
            file=file,
        )
