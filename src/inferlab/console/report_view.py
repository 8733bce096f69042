"""What `inferlab report` prints: a run folder's table and reading (its report.html
re-rendered), a peer tool's file judged, a recorded watch, and two runs side by side."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.metrics.runfolder import load_summary
from inferlab.report.inputs import compare_dir, render_run

if TYPE_CHECKING:
    from inferlab.report.verdict_text import Comparison
    from inferlab.summary import RunSummary


def show_run(d: Path, wide: bool) -> RunSummary | None:
    """An inferlab run folder: its table, its reading, and report.html re-rendered."""
    from inferlab.report.console import print_sweep
    from inferlab.report.reading import read_sweep

    # a recorded watch renders first, so a run's report.html can show it (the demo's)
    if render_watch_if_recorded(d) and not (d / "summary.json").exists():
        return None  # a folder holding only a `watch --record` file
    summary = load_summary(d)
    kind = "simulated" if summary.simulated else "measured"
    print(f"== {d} ({kind})")
    print_sweep(summary, wide=wide)
    if summary.paired is not None:  # bench --url A --url B: the pairs, as bench printed them
        from inferlab.report.paired_text import print_paired

        print_paired(summary.paired)
    for line in read_sweep(summary):
        print(line)
    print(f"report: {render_run(d, summary)}")
    return summary


def show_peer(path: Path, summary: RunSummary, tool: str, wide: bool) -> None:
    """Another tool's result file, judged: printed, nothing written."""
    from inferlab.report.console import print_sweep
    from inferlab.report.peer_text import peer_lines
    from inferlab.report.reading import read_sweep

    print(f"== {path} ({tool})")
    print_sweep(summary, wide=wide)
    for line in peer_lines(summary) + read_sweep(summary):
        print(line)


def compare_all(
    loaded: list[tuple[str, RunSummary, Path]],
    chart: Path | None,
    out: Path | None,
    comparison: Comparison | None = None,
) -> None:
    """compare.png (and, for two, compare.html) beside the runs or in --out."""
    from inferlab.report.diff import diff_runs, no_common_levels
    from inferlab.report.plots import compare_runs

    chart = chart or compare_dir([p for _, _, p in loaded], out) / "compare.png"
    named = [(n, s) for n, s, _ in loaded]
    if len(named) == 2:  # refused before anything is written
        (name_a, a), (name_b, b) = named
        no_common_levels(diff_runs(name_a, a, name_b, b), a, b)
    chart.parent.mkdir(parents=True, exist_ok=True)
    if len(named) == 2:
        plot = per_request_plot(loaded, chart.with_name("per_request.png"))
        print_two(named, chart.with_suffix(".html"), comparison, plot)
    print(f"side by side: {compare_runs(named, chart)}")


def per_request_plot(loaded: list[tuple[str, RunSummary, Path]], path: Path) -> Path | None:
    """Two runs of the same scheduled requests (a trace, an open loop; a prediction and
    its measurement): each request's TTFT and TPOT in both, against its instant."""
    from inferlab.report.per_request import folder_pairs, open_loop, plot_per_request

    (name_a, _, a), (name_b, _, b) = loaded
    pairs = folder_pairs(a, b)
    if not open_loop(pairs):
        return None
    plot_per_request(pairs, (name_a, name_b), path)
    print(f"per request ({len(pairs)} in both runs): {path}")
    return path


def print_two(
    loaded: list[tuple[str, RunSummary]],
    html_path: Path,
    comparison: Comparison | None = None,
    per_request: Path | None = None,
) -> None:
    """Run A beside run B, level by level: the console table, the verdicts, an HTML page."""
    from inferlab.report.diff import diff_runs, print_diff, render_diff_html
    from inferlab.report.verdict_text import print_verdicts, verdict_rows

    (name_a, a), (name_b, b) = loaded
    d = diff_runs(name_a, a, name_b, b)
    print_diff(d)
    verdicts = None
    if comparison is not None:
        print_verdicts(comparison)
        verdicts = verdict_rows(comparison) if comparison.diffs else None
    print(f"A vs B: {render_diff_html(d, a, b, html_path, verdicts, per_request)}")


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
