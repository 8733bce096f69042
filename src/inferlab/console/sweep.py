"""A sweep on the console: progress bars while it runs, then the table and the plots.

The commands call this; it calls the benchmark, then report/ to show what came back
(report never imports bench, so the arrow only points this way).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from inferlab import signals
from inferlab.bench.benchmark import BenchConfig, BenchResult
from inferlab.console.progress import ProgressHooks

if TYPE_CHECKING:
    from inferlab.summary import RunSummary, RunWarning


def execute(
    cfg: BenchConfig,
    no_plots: bool,
    hooks: ProgressHooks | None = None,
    wide: bool = False,
    report: bool = False,
) -> BenchResult:
    """Run the sweep with a progress bar, print the table (every column with `wide`),
    render plots and (with `report`) report.html. Returns the result."""
    from inferlab.bench.benchmark import event_loop_runner, run_benchmark
    from inferlab.bench.paired import run_paired
    from inferlab.report.console import print_sweep

    hooks = hooks or ProgressHooks()
    if cfg.floor_note:
        hooks.notes.append(cfg.floor_note)
    sweep = run_benchmark if cfg.paired is None else run_paired  # bench --url A --url B
    try:
        result: BenchResult = event_loop_runner()(sweep(cfg, hooks))
    except KeyboardInterrupt:
        hooks.close()
        if (cfg.out_dir / "summary.json").exists():  # none if stopped before the first level
            signals.kept(f"completed records and summary.json (interrupted) are in {cfg.out_dir}")
        raise
    finally:
        hooks.close()
    print_sweep(result.summary, wide=wide)
    if not no_plots:
        from inferlab.records import read_records
        from inferlab.report.plots import render_all

        floor = cfg.floor
        render_all(
            result.summary,
            read_records(result.records_path),
            cfg.out_dir,
            floor.cost if floor else None,
            floor.hardware if floor else None,
        )
    files = "records.jsonl, summary.json" + ("" if no_plots else ", *.png")
    print(f"results: {cfg.out_dir}/ ({files})")
    if report:
        from inferlab.report.html import render_html
        from inferlab.report.reading import read_sweep, setup_facts

        path = render_html(
            result.summary, cfg.out_dir, read_sweep(result.summary), setup_facts(result.summary)
        )
        print(f"report: {path} (again, or beside another run: inferlab report {cfg.out_dir})")
    return result


def planned_hooks(cfg: BenchConfig, workload: Any) -> ProgressHooks:
    """Progress bars that say, once the server accepted the run, what the sweep will cost
    (the levels' requests), or what the max-load search will probe."""
    from inferlab.bench.estimate import level_costs, plan_line, search_plan_line, with_canary

    if cfg.paired is not None:  # its own plan: blocks per level, per endpoint
        from inferlab.bench.paired import paired_plan_line

        hooks = ProgressHooks()
        hooks.notes.append(paired_plan_line(cfg))
        return hooks
    costs = None if cfg.search else level_costs(workload, cfg.levels)
    # --repeat N: the levels N times over, interleaved, in the order they run
    plan = None if costs is None else with_canary(costs * max(1, cfg.repeats), cfg.canary)
    hooks = ProgressHooks(plan=plan)
    if costs is not None:  # said once the server accepted the run, before level 1
        hooks.notes.append(plan_line(costs, cfg.repeats, cfg.canary))
    elif cfg.search is not None:
        s = cfg.search
        n = cfg.requests_per_level
        hooks.notes.append(search_plan_line(s.kind, s.start, s.upper, s.max_levels, n))
    return hooks


def strict_failures(summary: RunSummary) -> list[RunWarning]:
    return [w for w in summary.warnings if w.severity in ("error", "warning")]


def exit_code(summary: RunSummary, keep_going: bool, strict: bool) -> int:
    """1 for a level whose every request failed (unless --keep-going), or a --strict
    failure; 0 otherwise. Each 1 says why in one line."""
    from inferlab.bench.benchmark import all_failed

    failed = [lv.label for lv in summary.levels if all_failed(lv)]
    if failed and not keep_going:
        print(
            f"every request of {failed[0]} failed (see the errors above); exit 1 "
            "(--keep-going to go on and exit 0)",
            file=sys.stderr,
        )
        return 1
    found = summary.max_load
    if strict and found is not None and found.value is None:
        print("--strict: no level meets the SLO", file=sys.stderr)
        return 1
    if strict and strict_failures(summary):
        print("--strict: the run has errors or warnings (see above)", file=sys.stderr)
        return 1
    return 0
