"""`inferlab simulate --find-max-load`: the max-load search of `bench`, on the simulator.

Each probe is one simulation of the workload at that load (closed loop: that many users;
open loop: that rate for --duration), judged against the same --slo; every probe is a
level of the run's summary.json (and records.jsonl with --out), as bench keeps them.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

from inferlab.errors import InferlabError

# Requests per closed-loop probe: bench's default --requests-per-level.
SEARCH_REQUESTS = 64


@dataclass(frozen=True, slots=True)
class SimSetup:
    """What every probe shares: the step-time model and its description, the scheduler,
    simulate's load defaults and the limits."""

    model: Any
    desc: dict[str, Any]
    policy: Any
    defaults: Any  # load.flags.LoadDefaults
    limits: Any
    build_load: Callable[..., Any]  # commands.simulate.build_load (passed: no import cycle)


def _probe_args(args: argparse.Namespace, kind: str, value: float) -> argparse.Namespace:
    probe = argparse.Namespace(**vars(args))
    probe.inject_prompt, probe.trace, probe.concurrency = [], None, None
    if kind == "concurrency":
        users = int(value)
        probe.users, probe.rate = users, None
        probe.requests_per_user = max(args.requests_per_user, math.ceil(SEARCH_REQUESTS / users))
    else:
        probe.users, probe.rate = None, [value]
    return probe


def _measure(args: argparse.Namespace, setup: SimSetup, kind: str, value: float) -> Any:
    """One probe: (the result, its token times, its judged level)."""
    from inferlab.commands.slo_args import slo_from
    from inferlab.sim.engine import simulate
    from inferlab.sim.output import TokenTimes, summarize_result
    from inferlab.sim.slo_level import judge_simulated

    load = setup.build_load(_probe_args(args, kind, value), setup.defaults, setup.limits)
    res = simulate(
        load.arrivals, setup.model, setup.policy, load.users, max_steps=setup.limits.max_steps
    )
    times = TokenTimes.of(res)
    level = summarize_result(res, load.label, times)
    return res, times, judge_simulated(level, res, load.label, slo_from(args), times)


def run_search(args: argparse.Namespace, setup: SimSetup, text: IO[str]) -> int:
    """Search, print each probe and the answer, write the run; exit 1 under --strict when
    no level meets the SLO."""
    from inferlab.commands.slo_args import search_from
    from inferlab.jsonio import dumps

    kind = args.find_max_load
    if kind == "concurrency":
        given = [float(args.users)] if args.users is not None else args.concurrency or []
    else:
        given = args.rate or []
    if args.trace or args.inject_prompt:
        raise InferlabError(
            "--find-max-load simulates its own load: leave out --trace and --inject-prompt"
        )
    search = search_from(args, [float(v) for v in given], math.inf)
    assert search is not None
    probes: list[tuple[Any, Any, Any]] = []
    while (value := search.next_value()) is not None:
        res, times, level = _measure(args, setup, kind, value)
        probes.append((res, times, level))
        search.record(value, level.slo)
        sat = f", {level.saturation.verdict}" if level.saturation else ""
        verdict = "pass" if level.slo.passed else "fail"
        binding = level.slo.binding.describe(level.slo.min_attainment) if level.slo.binding else ""
        print(f"  {level.label}: {verdict} ({binding}){sat}", file=text)
    found = search.result()
    print(found.message, file=text)
    summary = _summary(args, setup, probes, found)
    if args.out is not None:
        _write(args, probes, summary, text)
    if args.json:
        print(dumps(summary))
    return 1 if args.strict and found.value is None else 0


def _summary(
    args: argparse.Namespace, setup: SimSetup, probes: list[tuple[Any, Any, Any]], found: Any
) -> Any:
    """One RunSummary: every probe a level, in the order measured, and the `max_load` block."""
    from dataclasses import replace

    from inferlab.sim.output import build_summary

    res, _, level = probes[-1]
    p = setup.policy
    config = {
        **setup.desc,
        "policy": p.name,
        "max_batch": p.max_batch,
        "chunk_tokens": p.chunk_tokens,
        "kv_capacity_tokens": p.kv_capacity_tokens,
        "block_tokens": p.block_tokens,
        "seed": args.seed,
        "workload": {
            "prompt_tokens": _mean_tokens(res, "prompt_tokens"),
            "output_tokens": _mean_tokens(res, "output_tokens"),
            "requests_per_level": len(res.requests),
        },
    }
    summary = build_summary(res, level, config, ["inferlab", *sys.argv[1:]])
    return replace(summary, levels=tuple(lv for _, _, lv in probes), max_load=found)


def _mean_tokens(res: Any, name: str) -> int:
    """The last probe's mean length (the load flags may draw a distribution)."""
    n = len(res.requests)
    return round(sum(getattr(r, name) for r in res.requests) / n) if n else 0


def _write(
    args: argparse.Namespace,
    probes: list[tuple[Any, Any, Any]],
    summary: Any,
    text: IO[str],
) -> None:
    from inferlab.jsonio import write_json
    from inferlab.records import RecordWriter
    from inferlab.runfolder import claim_run_folder
    from inferlab.sim.output import iter_records

    with claim_run_folder(args.out, args.overwrite, args.append_run) as folder:
        w = RecordWriter(folder / "records.jsonl")
        try:
            for res, times, level in probes:
                for r in iter_records(res, level.label, times):
                    w.write(r)
        finally:
            w.close()
        write_json(folder / "summary.json", summary)
    print(f"results: {folder}/ (records.jsonl, summary.json); every level tried is kept", file=text)
