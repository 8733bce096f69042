"""`inferlab report DIR [DIR ...]`: re-render plots and report.html from saved records.

With two runs (`inferlab report A B`), also the two side by side, level by level, with
the difference (console table and compare.html beside compare.png)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inferlab.summary import RunSummary


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("report", help="re-render a run's report from its records and summary")
    p.add_argument("dirs", nargs="+", type=Path, help="run folders (records.jsonl, summary.json)")
    p.add_argument(
        "--compare",
        type=Path,
        default=Path("compare.png"),
        help="with several runs: their side-by-side chart (compare.png); with two, the "
        "level-by-level difference beside it (compare.html)",
    )
    p.add_argument("--wide", action="store_true", help="every column in the sweep table")
    p.set_defaults(run=run)


def floor_from_summary(summary: RunSummary) -> tuple[Any, Any]:
    """The floor as the summary recorded it (bytes and rates), for the predicted curve."""
    from inferlab.specs.cost import ModelCost
    from inferlab.specs.hardware import STATED, with_overrides

    fl = summary.floor
    if not fl:
        return None, None
    cost = ModelCost.stated(fl.weight_bytes_per_step, fl.kv_bytes_per_token)
    hw = with_overrides(STATED, fl.bandwidth_bytes_per_s, fl.peak_flops_per_s)
    return cost, hw


def render_run(out_dir: Path, summary: RunSummary) -> Path:
    """Plots + report.html for one run folder; returns the report's path."""
    from inferlab.records import scan_records
    from inferlab.report.html import render_html
    from inferlab.report.plots import render_all
    from inferlab.report.reading import read_sweep, setup_facts

    records_path = out_dir / "records.jsonl"
    records = []
    if records_path.exists():
        read = scan_records(records_path)
        records = read.records
        for problem in read.problems:  # a run killed mid-write still renders, and says so
            print(f"warning: {problem}", file=sys.stderr)
    cost, hw = floor_from_summary(summary)
    render_all(summary, records, out_dir, cost, hw)
    return render_html(summary, out_dir, read_sweep(summary), setup_facts(summary))


def run(args: argparse.Namespace) -> int:
    from inferlab.report.console import print_sweep
    from inferlab.report.reading import read_sweep
    from inferlab.rundir import load_summary

    loaded = []
    for d in args.dirs:
        # a recorded watch renders first, so a run's report.html can show it (the demo's)
        if render_watch_if_recorded(d) and not (d / "summary.json").exists():
            continue  # a folder holding only a `watch --record` file
        summary = load_summary(d)
        kind = "simulated" if summary.simulated else "measured"
        print(f"== {d} ({kind})")
        print_sweep(summary, wide=args.wide)
        for line in read_sweep(summary):
            print(line)
        print(f"report: {render_run(d, summary)}")
        loaded.append((f"{d.name} ({kind})", summary))
    if len(loaded) > 1:
        from inferlab.report.plots import compare_runs

        print(f"side by side: {compare_runs(loaded, args.compare)}")
    if len(loaded) == 2:
        print_two(loaded, args.compare.with_suffix(".html"))
    return 0


def print_two(loaded: list[tuple[str, RunSummary]], html_path: Path) -> None:
    """Run A beside run B, level by level: the console table and an HTML page."""
    from inferlab.report.diff import diff_runs, print_diff, render_diff_html

    (name_a, a), (name_b, b) = loaded
    d = diff_runs(name_a, a, name_b, b)
    print_diff(d)
    print(f"A vs B: {render_diff_html(d, a, b, html_path)}")


def render_watch_if_recorded(d: Path) -> bool:
    """A recorded `inferlab watch` in the folder: print its summary and render watch.html."""
    from inferlab.errors import InferlabError
    from inferlab.report.watch import find_watch_record, render_watch, summary_lines
    from inferlab.watch.record import read_record

    record = find_watch_record(d) if d.is_dir() else None
    if record is None:
        return False
    header, frames = read_record(record)
    if not frames:
        raise InferlabError(f"{record}: a watch header but no frames (did it stop at once?)")
    print(f"== {d} (watch)")
    for line in summary_lines(header, frames):
        print(line)
    print(f"report: {render_watch(d, record)}")
    return True
