"""`inferlab report RUN [RUN ...]`: re-render a run folder's plots and report.html from its
saved records, or read another tool's result file (vLLM, AIPerf, guidellm, SGLang,
llama.cpp; told by content, inferlab.peers) and judge it against the floor and an SLO.

With two runs (`inferlab report A B`, either side a folder or a file), also the two side by
side, level by level, with the difference (console table, compare.html and compare.png in
--out, else beside the runs). `--json` prints the summary (or summaries) and nothing else."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.argtypes import real
from inferlab.commands.common import add_hardware, add_model
from inferlab.rundir import load_summary
from inferlab.slo.flags import slo_text

if TYPE_CHECKING:
    from inferlab.peers.judge import FloorSpec
    from inferlab.slo.grammar import Slo
    from inferlab.summary import RunSummary


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="re-render a run's report, or read another tool's result file against the floor",
    )
    p.add_argument(
        "dirs",
        nargs="+",
        type=Path,
        help="inferlab run folders (records.jsonl, summary.json) or result files of vLLM "
        "bench serve, AIPerf, guidellm, SGLang bench_serving, llama-bench (told by content)",
    )
    p.add_argument(
        "--compare",
        type=Path,
        help="with several runs: their side-by-side chart (default compare.png beside the "
        "runs, or in --out); with two, the level-by-level difference beside it (compare.html)",
    )
    p.add_argument("--out", type=Path, help="folder for compare.png / compare.html")
    p.add_argument("--wide", action="store_true", help="every column in the sweep table")
    p.add_argument(
        "--json", action="store_true", help="print the summary as strict JSON (nothing else)"
    )
    g = p.add_argument_group("floor for a peer's file (as bench's)")
    g.add_argument("--floor-gguf", help="the served GGUF file (real tensor bytes)")
    add_model(p)
    add_hardware(p)
    s = p.add_argument_group("SLO for a peer's file")
    s.add_argument("--slo", type=slo_text, help="e.g. ttft=500ms,tpot=50ms,ttft_p99=1s")
    s.add_argument(
        "--min-attainment",
        type=real(0.0, 1.0, above=True),
        default=0.9,
        help="share of requests that must meet every per-request objective (0.9)",
    )
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
    floor, slo = peer_floor(args), peer_slo(args)
    # Every input is read (and a bad one refused) before anything is printed or written.
    read = [read_input(d, floor, slo) for d in args.dirs]
    sides = [(name, summary) for name, summary, _, _ in read if summary is not None]
    if len(sides) == 2:  # nothing to compare is refused before anything is printed
        from inferlab.report.diff import diff_runs, no_common_levels

        (name_a, a), (name_b, b) = sides
        no_common_levels(diff_runs(name_a, a, name_b, b), a, b)
    if args.json:
        from inferlab.jsonio import dumps

        docs = [s.to_json() for _, s, _, _ in read if s is not None]
        sys.stdout.write(dumps(docs[0] if len(docs) == 1 else docs) + "\n")
        return 0
    loaded = []
    for name, summary, path, tool in read:
        if tool is None:
            summary = show_run(path, args)
        elif summary is not None:
            show_peer(path, summary, tool, args)
        if summary is not None:
            loaded.append((name, summary, path))
    if len(loaded) > 1:
        compare_all(loaded, args)
    return 0


Read = tuple[str, "RunSummary | None", Path, "str | None"]


def read_input(d: Path, floor: FloorSpec | None, slo: Slo | None) -> Read:
    """(name, summary, path, peer tool): a run folder (tool None) or a peer's file."""
    if d.name == "summary.json" and d.is_file():
        d = d.parent  # an inferlab run's own summary: its folder
    d = peer_file_in(d)
    if d.is_dir() or not d.exists():
        has_summary = (d / "summary.json").exists()
        summary = load_summary(d) if has_summary or not d.is_dir() else None
        kind = "simulated" if summary is not None and summary.simulated else "measured"
        return f"{d.name} ({kind})", summary, d, None
    from inferlab.peers.detect import read_peer
    from inferlab.peers.judge import summarise

    peer = read_peer(d)
    return f"{d.name} ({peer.tool})", summarise(peer, floor, slo), d, peer.tool


# What a peer tool leaves in its output folder, the per-request file first.
PEER_FILES = ("profile_export.jsonl", "profile_export_aiperf.json", "benchmarks.json")


def peer_file_in(d: Path) -> Path:
    """A peer tool's output folder (AIPerf's artifact dir, guidellm's) stands for its result
    file; an inferlab run folder (summary.json or records.jsonl) stays a folder."""
    if not d.is_dir() or any((d / f).exists() for f in ("summary.json", "records.jsonl")):
        return d
    return next((d / f for f in PEER_FILES if (d / f).is_file()), d)


def show_run(d: Path, args: argparse.Namespace) -> RunSummary | None:
    """An inferlab run folder: its table, its reading, and report.html re-rendered."""
    from inferlab.report.console import print_sweep
    from inferlab.report.reading import read_sweep

    # a recorded watch renders first, so a run's report.html can show it (the demo's)
    if render_watch_if_recorded(d) and not (d / "summary.json").exists():
        return None  # a folder holding only a `watch --record` file
    summary = load_summary(d)
    kind = "simulated" if summary.simulated else "measured"
    print(f"== {d} ({kind})")
    print_sweep(summary, wide=args.wide)
    for line in read_sweep(summary):
        print(line)
    print(f"report: {render_run(d, summary)}")
    return summary


def show_peer(path: Path, summary: RunSummary, tool: str, args: argparse.Namespace) -> None:
    """Another tool's result file, judged: printed, nothing written."""
    from inferlab.report.console import print_sweep
    from inferlab.report.peer_text import peer_lines
    from inferlab.report.reading import read_sweep

    print(f"== {path} ({tool})")
    print_sweep(summary, wide=args.wide)
    for line in peer_lines(summary) + read_sweep(summary):
        print(line)


def peer_floor(args: argparse.Namespace) -> FloorSpec | None:
    """--floor-gguf, or --model with --hardware, or stated figures: the floor for peers."""
    from inferlab.errors import InferlabError
    from inferlab.peers.judge import FloorSpec
    from inferlab.specs.stated import cost_from, hardware_from

    model = args.floor_gguf or args.model
    stated = args.weight_bytes is not None
    if not (model or stated or args.hardware or args.bandwidth or args.flops):
        return None
    if not (model or stated):
        raise InferlabError(
            "a floor needs the model: --floor-gguf FILE or --model NAME beside --hardware"
        )
    cost = cost_from(
        model,
        args.weight_dtype,
        args.kv_dtype,
        args.weight_bytes,
        args.kv_bytes_per_token,
        args.params,
        args.tp,
    )
    hw = hardware_from(args.hardware, args.bandwidth, args.flops, args.memory, args.tp)
    return FloorSpec(cost, hw)


def peer_slo(args: argparse.Namespace) -> Slo | None:
    from inferlab.slo.grammar import parse_slo

    return None if args.slo is None else parse_slo(args.slo, args.min_attainment)


def compare_all(loaded: list[tuple[str, RunSummary, Path]], args: argparse.Namespace) -> None:
    """compare.png (and, for two, compare.html) beside the runs or in --out."""
    from inferlab.report.diff import diff_runs, no_common_levels
    from inferlab.report.plots import compare_runs

    chart = args.compare or compare_dir([p for _, _, p in loaded], args.out) / "compare.png"
    named = [(n, s) for n, s, _ in loaded]
    if len(named) == 2:  # refused before anything is written
        (name_a, a), (name_b, b) = named
        no_common_levels(diff_runs(name_a, a, name_b, b), a, b)
    chart.parent.mkdir(parents=True, exist_ok=True)
    if len(named) == 2:
        print_two(named, chart.with_suffix(".html"))
    print(f"side by side: {compare_runs(named, chart)}")


def compare_dir(paths: list[Path], out: Path | None) -> Path:
    """--out, else the first run folder compared, else a folder beside the first file:
    never loose files in the current directory."""
    if out is not None:
        return out
    for p in paths:
        if p.is_dir():
            return p
    a = paths[0]
    stems = "-vs-".join(p.stem for p in paths[:2])
    return a.parent / f"compare-{stems}"


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
