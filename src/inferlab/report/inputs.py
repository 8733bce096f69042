"""What `inferlab report` reads: a run folder or another tool's result file (told by
content, inferlab.peers) as a RunSummary, and a run's plots and report.html re-rendered
from its saved records."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.metrics.runfolder import load_summary

if TYPE_CHECKING:
    from inferlab.physics.floor import Floor
    from inferlab.slo.grammar import Slo
    from inferlab.summary import RunSummary


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


Read = tuple[str, "RunSummary | None", Path, "str | None"]


def read_input(d: Path, floor: Floor | None, slo: Slo | None) -> Read:
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


# What a peer tool leaves in its output folder: AIPerf's --num-profile-runs aggregate (it
# reads every run), then the per-request file first.
PEER_FILES = (
    "aggregate/profile_export_aiperf_aggregate.json",
    "profile_export.jsonl",
    "profile_export_aiperf.json",
    "benchmarks.json",
)


def peer_file_in(d: Path) -> Path:
    """A peer tool's output folder (AIPerf's artifact dir, guidellm's) stands for its result
    file; an inferlab run folder (summary.json or records.jsonl) stays a folder."""
    if not d.is_dir() or any((d / f).exists() for f in ("summary.json", "records.jsonl")):
        return d
    return next((d / f for f in PEER_FILES if (d / f).is_file()), d)


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
