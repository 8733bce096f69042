"""`inferlab simulate`: what a scheduler does to every user's latency, from the physics or a fit."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from inferlab.commands.common import (
    BYTES,
    TIME,
    add_hardware,
    add_model,
    resolve_cost,
    resolve_hardware,
)
from inferlab.commands.slo_args import add_slo_args, slo_from
from inferlab.errors import InferlabError
from inferlab.load.flags import LoadDefaults, add_load_flags

# simulate's defaults: an open loop runs 60 s; a closed loop sends one request per user.
SIM_LOAD = LoadDefaults(requests_per_level=None, duration_s=60.0)

if TYPE_CHECKING:
    from inferlab.commands.sim_load import Load
    from inferlab.sim.limits import Limits
    from inferlab.sim.scheduler import Policy
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
    add_load_flags(p, SIM_LOAD)
    g = p.add_argument_group("simulate's own load flags")
    g.add_argument("--users", type=int, help="closed loop: this many users (= --concurrency N)")
    g.add_argument(
        "--requests-per-user", type=int, default=1, help="with --users: requests each (1)"
    )
    g.add_argument(
        "--stagger",
        type=TIME,
        default=0.0,
        help="spread the users' first requests over this window (0: all at once)",
    )
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
    add_slo_args(p)
    p.add_argument(
        "--strict", action="store_true", help="exit 1 when --find-max-load finds no level"
    )
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


def sim_config(
    desc: dict[str, Any], policy: Policy, args: argparse.Namespace, load: Load
) -> dict[str, Any]:
    from inferlab.commands.sim_load import workload_json

    return {
        **desc,
        "policy": policy.name,
        "max_batch": policy.max_batch,
        "chunk_tokens": policy.chunk_tokens,
        "kv_capacity_tokens": policy.kv_capacity_tokens,
        "block_tokens": policy.block_tokens,
        "seed": args.seed,
        "workload": workload_json(load, args.inject_prompt),
    }


def run(args: argparse.Namespace) -> int:
    from inferlab.commands.sim_load import build_load, check_lengths, with_turns
    from inferlab.runfolder import resolve_run_folder
    from inferlab.sim.engine import simulate
    from inferlab.sim.output import TokenTimes, build_summary, summarize_result

    limits = build_limits(args)
    if args.out is not None:
        resolve_run_folder(args.out, args.overwrite, args.append_run)  # refuse before the work
    model, desc, cost, hw = build_model(args)
    policy = build_policy(args, cost, hw)
    slo = slo_from(args)
    text = sys.stderr if args.json else sys.stdout  # --json: stdout carries the JSON alone
    if args.find_max_load:
        from inferlab.commands.sim_search import SimSetup, run_search

        return run_search(args, SimSetup(model, desc, policy, SIM_LOAD, limits, build_load), text)
    load = build_load(args, SIM_LOAD, limits)
    check_lengths(load, policy, limits)
    from inferlab.commands.engine_model import check_batches

    fit_lines = check_batches(model, policy, load.users.users if load.users else None)
    t = time.perf_counter()
    res = simulate(load.arrivals, model, policy, load.users, max_steps=limits.max_steps)
    wall = time.perf_counter() - t
    times = TokenTimes.of(res)
    config = {**sim_config(desc, policy, args, load), "wall_s": wall}
    config["workload"]["requests_per_level"] = len(res.requests)
    level = with_turns(summarize_result(res, load.label, times), res, times, load)
    from inferlab.sim.slo_level import judge_simulated

    level = judge_simulated(level, res, load.label, slo, times)
    summary = build_summary(res, level, config, ["inferlab", *sys.argv[1:]])
    print_result(level, summary.simulation, res, wall, text)
    print_slo(level, text)
    for line in fit_lines:
        print(f"  step time: {line}", file=text)
    if args.out is not None:
        write_run(args, res, times, summary, text, load.requests)
    if args.json:
        from inferlab.jsonio import dumps

        print(dumps(summary.to_json()))
    return 0


def write_run(
    args: argparse.Namespace,
    res: Any,
    times: Any,
    summary: RunSummary,
    text: IO[str],
    specs: Any = None,
) -> None:
    from inferlab.jsonio import write_json
    from inferlab.runfolder import claim_run_folder
    from inferlab.sim.output import iter_records, write_records

    with claim_run_folder(args.out, args.overwrite, args.append_run) as folder:
        label = summary.levels[0].label
        write_records(folder / "records.jsonl", iter_records(res, label, times, specs))
        write_json(folder / "summary.json", summary)
    print(
        f"results: {folder}/ (records.jsonl, summary.json); `inferlab report {folder}`", file=text
    )


def ms(x: float | None) -> str:
    """ms below 10 s, s from 10 s, min from 10 min (units.fmt_duration)."""
    from inferlab.units import fmt_duration

    return "-" if x is None else fmt_duration(x)


def print_slo(lv: LevelSummary, file: IO[str]) -> None:
    """The level against --slo, and an open-loop level's saturation verdict."""
    from inferlab.slo.saturation import GROWING_NOTE, THRESHOLDS

    if lv.slo is not None:
        g = lv.slo
        why = "" if g.binding is None else f"; binding {g.binding.describe(g.min_attainment)}"
        print(
            f"  SLO {g.slo}: {'pass' if g.passed else 'fail'}; attainment {g.attainment:.0%} "
            f"(min {g.min_attainment:.0%}); goodput {g.goodput_requests_per_s:.3g} req/s, "
            f"{g.goodput_tokens_per_s:.4g} tok/s{why}",
            file=file,
        )
    if lv.saturation is not None:
        print(f"  load: {lv.saturation.describe()} ({THRESHOLDS})", file=file)
        if lv.saturation.verdict == "overloaded":
            print(f"  {GROWING_NOTE}", file=file)


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
