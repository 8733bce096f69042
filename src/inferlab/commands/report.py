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
from typing import TYPE_CHECKING

from inferlab.commands.flags.argtypes import real, share_arg
from inferlab.commands.flags.common import add_hardware, add_model, resolve_hardware
from inferlab.commands.flags.slo import slo_text
from inferlab.console.report_view import compare_all, show_peer, show_run
from inferlab.errors import InferlabError
from inferlab.report.inputs import Read, read_input

if TYPE_CHECKING:
    from inferlab.physics.floor import Floor
    from inferlab.report.verdict_text import Comparison
    from inferlab.slo.grammar import Slo


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="re-render a run's report, or another tool's results against the floor",
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
        "--json",
        action="store_true",
        help="print the summary as strict JSON (nothing else); with two runs, "
        '{"a": ..., "b": ..., "comparison": ...}: each quantity with its verdict',
    )
    p.add_argument(
        "--fail-if-slower",
        type=share_arg,
        metavar="PCT",
        help="with two runs (A B): exit 1 when B is slower than A beyond noise by more than "
        "PCT (e.g. 5%%) on any level's TTFT, TPOT, E2E or tok/s, for CI pipelines (a p99 "
        "of under 100 requests is shown but not acted on)",
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


def _compared(args: argparse.Namespace, read: list[Read]) -> Comparison | None:
    """Two runs: refused when they share no level, else their verdicts (report/verdict_text);
    None for one run or several. --fail-if-slower needs exactly two."""
    sides = [(name, summary, path) for name, summary, path, _ in read if summary is not None]
    if len(sides) != 2:
        if args.fail_if_slower is not None:
            raise InferlabError("--fail-if-slower compares two runs: give A and B")
        return None
    from inferlab.report.diff import diff_runs, no_common_levels
    from inferlab.report.verdict_text import compare_paths

    (name_a, a, path_a), (name_b, b, path_b) = sides
    d = diff_runs(name_a, a, name_b, b)
    no_common_levels(d, a, b)  # nothing to compare is refused before anything is printed
    # a start time of 0 is a file that did not say when it ran
    known = a.started_at_unix_s > 0 and b.started_at_unix_s > 0
    apart = b.started_at_unix_s - a.started_at_unix_s if known else None
    between = None
    if a.canary is not None and b.canary is not None:
        from inferlab.metrics.machine_verdict import verdict_of

        between = verdict_of(a.canary, b.canary)
    return compare_paths(d, path_a, path_b, apart, between)


def run(args: argparse.Namespace) -> int:
    floor, slo = peer_floor(args), peer_slo(args)
    # Every input is read (and a bad one refused) before anything is printed or written.
    read = [read_input(d, floor, slo) for d in args.dirs]
    comparison = _compared(args, read)
    if args.json:
        from inferlab.jsonio import dumps

        docs = [s.to_json() for _, s, _, _ in read if s is not None]
        if comparison is not None:
            from inferlab.report.verdict_text import comparison_json

            doc: object = {"a": docs[0], "b": docs[1], "comparison": comparison_json(comparison)}
        else:
            doc = docs[0] if len(docs) == 1 else docs
        sys.stdout.write(dumps(doc) + "\n")
        return _fail_if_slower(args, comparison)
    loaded = []
    for name, summary, path, tool in read:
        if tool is None:
            summary = show_run(path, args.wide)
        elif summary is not None:
            show_peer(path, summary, tool, args.wide)
        if summary is not None:
            loaded.append((name, summary, path))
    if len(loaded) > 1:
        compare_all(loaded, args.compare, args.out, comparison)
    return _fail_if_slower(args, comparison)


def _fail_if_slower(args: argparse.Namespace, comparison: Comparison | None) -> int:
    """1 (each reason on stderr) when B is slower beyond noise by more than the share
    given; 0 otherwise, or without the flag."""
    if args.fail_if_slower is None or comparison is None:
        return 0
    from inferlab.report.verdict_text import failing, gate_line

    if not comparison.diffs:
        raise InferlabError(f"--fail-if-slower: {'; '.join(comparison.notes)}")
    bad = failing(comparison, args.fail_if_slower)
    for q in bad:
        print(gate_line(q, args.fail_if_slower), file=sys.stderr)
    return 1 if bad else 0


def peer_floor(args: argparse.Namespace) -> Floor | None:
    """--floor-gguf, or --model with --hardware, or stated figures: the floor for peers."""
    from inferlab.errors import InferlabError
    from inferlab.physics.floor import Floor
    from inferlab.specs.stated import cost_from

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
    return Floor(cost, resolve_hardware(args))


def peer_slo(args: argparse.Namespace) -> Slo | None:
    from inferlab.slo.grammar import parse_slo

    return None if args.slo is None else parse_slo(args.slo, args.min_attainment)
