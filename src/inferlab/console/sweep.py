"""A sweep on the console: progress bars while it runs, then the table and the plots.

The commands call this; it calls the benchmark, then report/ to show what came back
(report never imports bench, so the arrow only points this way).
"""

from __future__ import annotations

from inferlab import signals
from inferlab.bench.benchmark import BenchConfig, BenchResult
from inferlab.console.progress import ProgressHooks


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
    from inferlab.report.console import print_sweep

    hooks = hooks or ProgressHooks()
    if cfg.floor_note:
        hooks.notes.append(cfg.floor_note)
    try:
        result: BenchResult = event_loop_runner()(run_benchmark(cfg, hooks))
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
