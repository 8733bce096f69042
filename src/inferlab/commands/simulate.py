"""`inferlab simulate`: what a scheduler does to every user's latency, from the physics or a fit.

Flags in, one `SimConfig` (sim/simulate_level.py), one call (`sim.run.run` or, with --find-max-load,
`sim.run.search`), the result printed and kept (`sim.run.write_run`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.commands.flags.argtypes import TIME
from inferlab.commands.flags.load import LoadDefaults, add_load_flags, load_from_args
from inferlab.commands.flags.sim import add_sim_args, limits_from, model_and_policy
from inferlab.commands.flags.slo import add_slo_args, search_spec, slo_from
from inferlab.errors import InferlabError

# simulate's defaults: an open loop runs 60 s; a closed loop sends one request per user.
SIM_LOAD = LoadDefaults(requests_per_level=None, duration_s=60.0, one_level=True)

if TYPE_CHECKING:
    from inferlab.load.spec import Level
    from inferlab.sim.simulate_level import SimConfig


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
        help="spread the users' first requests over this window (0; all at once)",
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


def _level(args: argparse.Namespace) -> Level | None:
    """The one level simulate runs: --users N is --concurrency N."""
    from inferlab.load.spec import Level
    from inferlab.sim.limits import at_least

    if args.users is not None:
        if args.concurrency or args.rate or args.trace:
            raise InferlabError("--users is --concurrency: give one of --users, --rate, --trace")
        return Level("concurrency", at_least(args.users, 1, "users"))
    if args.find_max_load:
        return None  # the search picks the levels
    if not (args.concurrency or args.rate or args.trace):
        raise InferlabError("give a load: --concurrency N (--users N), --rate R/s or --trace FILE")
    return None


def config_from(args: argparse.Namespace) -> SimConfig:
    """The flags, read once into the simulation they describe."""
    import dataclasses

    from inferlab.sim.simulate_level import SimConfig

    limits = limits_from(args)
    level = _level(args)
    workload = load_from_args(args, SIM_LOAD)
    if level is not None:
        workload = dataclasses.replace(workload, levels=(level,))
    if args.find_max_load:  # a search picks its own levels
        workload = dataclasses.replace(workload, levels=())
    _, sm, policy = model_and_policy(args)
    given = [float(args.users)] if args.users is not None else None
    return SimConfig(
        sm.model,
        policy,
        workload,
        slo=slo_from(args),
        limits=limits,
        injected=tuple(args.inject_prompt),
        requests_per_user=args.requests_per_user,
        stagger_s=args.stagger,
        description=sm.description,
        command=("inferlab", *sys.argv[1:]),
        search=search_spec(args, given),
        costs=sm.costs,
    )


def run(args: argparse.Namespace) -> int:
    from inferlab.console import sim_text as say
    from inferlab.metrics.runfolder import resolve_run_folder
    from inferlab.sim import simulated_run as sim

    if args.out is not None:
        resolve_run_folder(args.out, args.overwrite, args.append_run)  # refuse before the work
    cfg = config_from(args)
    text = sys.stderr if args.json else sys.stdout  # --json: stdout carries the JSON alone
    if cfg.search is not None:
        result = sim.search(cfg, lambda sl: say.probe(sl.summary, text))
        print(result.summary.max_load.message if result.summary.max_load else "", file=text)
    else:
        result = sim.run(cfg)
        (sl,) = result.levels
        say.result(sl, result.summary.simulation, result.wall_s, text)
        say.prompts(sl.summary, cfg.costs, text)
        say.slo(sl.summary, text)
        for line in result.fit_lines:
            print(f"  step time: {line}", file=text)
    if args.out is not None:
        folder = sim.write_run(result, args.out, args.overwrite, args.append_run)
        kept = "every level tried is kept" if cfg.search else f"`inferlab report {folder}`"
        print(f"results: {folder}/ (records.jsonl, summary.json); {kept}", file=text)
    if args.json:
        from inferlab.jsonio import dumps

        print(dumps(result.summary))
    found = result.summary.max_load
    return 1 if args.strict and found is not None and found.value is None else 0
