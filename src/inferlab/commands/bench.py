"""`inferlab bench`: an honest sweep of an OpenAI-compatible server, compared with the floor."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext, redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.commands.flags.bench import add_parser_args
from inferlab.commands.flags.bench_config import BenchInputs, bench_config, checked_inputs
from inferlab.jsonio import dumps
from inferlab.metrics.runfolder import claim_run_folder, default_out

if TYPE_CHECKING:
    from inferlab.summary import RunSummary


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="benchmark an OpenAI-compatible server honestly")
    add_parser_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    given = checked_inputs(args)
    with claim_run_folder(args.out or default_out(), args.overwrite, args.append_run) as out:
        return _run_in(args, given, out)


def _run_in(args: argparse.Namespace, given: BenchInputs, out: Path) -> int:
    from inferlab.console.sweep import execute, exit_code, planned_hooks

    cfg = bench_config(args, given, out)
    workload = given.workload
    # --json: stdout holds the JSON alone; the progress, table and paths go to stderr.
    with redirect_stdout(sys.stderr) if args.json else nullcontext():
        hooks = planned_hooks(cfg, workload)
        result = execute(cfg, args.no_plots, hooks, args.wide, report=not args.no_report)
        if result.summary.paired is not None:  # bench --url A --url B: B against A
            from inferlab.report.paired_text import print_paired

            print_paired(result.summary.paired)
    if args.csv is not None:
        from inferlab.report.table_csv import write_level_csv

        print(f"level table: {write_level_csv(result.summary, args.csv)}", file=sys.stderr)
    if args.json:
        print(dumps(result.summary))
    code = exit_code(result.summary, args.keep_going, args.strict)
    return max(code, _fail_if_slower(result.summary, args.fail_if_slower))


def _fail_if_slower(summary: RunSummary, threshold: float | None) -> int:
    """A paired run's gate: 1 (each reason on stderr) when an endpoint is slower than the
    first beyond noise by more than the share given; 0 otherwise, or without the flag."""
    if threshold is None or summary.paired is None:
        return 0
    from inferlab.report.paired_text import failing, gate_line

    bad = failing(summary.paired, threshold)
    for lv, c, q in bad:
        print(gate_line(lv, c, q, threshold), file=sys.stderr)
    return 1 if bad else 0
