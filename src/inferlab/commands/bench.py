"""`inferlab bench`: an honest sweep of an OpenAI-compatible server, compared with the floor."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from contextlib import nullcontext, redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.bench.flags import MAX_LOCAL_WORKERS, MAX_STREAMS, SWEEPS, add_parser_args
from inferlab.errors import InferlabError
from inferlab.jsonio import dumps
from inferlab.load.flags import load_from_args
from inferlab.runfolder import claim_run_folder
from inferlab.slo.flags import search_from, slo_from
from inferlab.specs.stated import cost_from, hardware_from

if TYPE_CHECKING:
    from inferlab.summary import RunSummary, RunWarning


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="benchmark an OpenAI-compatible server honestly")
    add_parser_args(p)
    p.set_defaults(run=run, floor_note=None)


def resolve_floor(args: argparse.Namespace) -> Any:
    from inferlab.physics.floor import Floor

    model = args.floor_model or args.floor_gguf
    if model is None and args.floor_hardware is None and args.floor_bandwidth is None:
        return None
    if model is None:
        raise InferlabError("a floor needs --floor-model or --floor-gguf beside its hardware")
    cost = cost_from(model, args.floor_weight_dtype, args.floor_kv_dtype, tp=args.floor_tp)
    hw = hardware_from(
        args.floor_hardware, args.floor_bandwidth, args.floor_flops, tp=args.floor_tp
    )
    return Floor(cost, hw, args.floor_tp)


MIN_RATE_PER_S, MAX_RATE_PER_S = 1e-3, 1e6


def workload_from(args: argparse.Namespace) -> Any:
    """The load flags as a Workload (load/flags.py), with bench's own bounds."""
    # 1/rate is the mean gap: below 0.001/s one level takes days (and 1e-300/s overflows).
    if args.rate and not all(MIN_RATE_PER_S <= r <= MAX_RATE_PER_S for r in args.rate):
        raise InferlabError(
            f"--rate: each rate must be {MIN_RATE_PER_S:g}/s to {MAX_RATE_PER_S:g}/s, e.g. 4,8,16"
        )
    workload = load_from_args(args, SWEEPS[args.sweep])
    if workload.output.kind == "fixed" and workload.output.a < 2:
        raise InferlabError(
            "--output-tokens: at least 2 for bench (TPOT is the time between output tokens)"
        )
    return workload


def check_sizes(args: argparse.Namespace) -> None:
    if args.requests_per_level is not None and args.requests_per_level < 1:
        raise InferlabError("--requests-per-level must be >= 1")
    workers = max(1, getattr(args, "workers", 1))  # auto (0) is sized later; demo has none
    if args.concurrency and max(args.concurrency) > MAX_STREAMS * workers:
        raise InferlabError(
            f"--concurrency: at most {MAX_STREAMS} streams per level and worker "
            f"({workers} worker(s)); add --workers"
        )
    if getattr(args, "ray", None) is None and workers > MAX_LOCAL_WORKERS:
        raise InferlabError(
            f"--workers {args.workers}: at most {MAX_LOCAL_WORKERS} local processes "
            "(one per core is plenty); for more, spread them with --ray ADDRESS"
        )


def default_out() -> Path:
    return Path("results") / time.strftime("run-%Y%m%d-%H%M%S")


def worker_options(
    args: argparse.Namespace, levels: list[Any], floor: Any, output_tokens: int
) -> Any:
    """--workers / --ray as WorkerOptions; auto measured here (printed to stderr)."""
    from inferlab.bench.autosize import auto_workers, expected_tokens_per_s, ingest_events_per_cpu_s
    from inferlab.bench.fleet import WorkerOptions

    count = args.workers
    if count == 0:
        expected = expected_tokens_per_s(levels, output_tokens, floor)
        ingest = ingest_events_per_cpu_s()
        count = auto_workers(expected, ingest)
        print(
            f"--workers auto: {count} (expected <= {expected:,.0f} tok/s; one worker ingests "
            f"~{ingest:,.0f} events per CPU-second here)",
            file=sys.stderr,
        )
    if args.ray is not None and args.workers == 1:
        count = 2  # --ray alone: two actors, spread over the cluster's nodes
    return WorkerOptions(count, args.ray)


def strict_failures(summary: RunSummary) -> list[RunWarning]:
    return [w for w in summary.warnings if w.severity in ("error", "warning")]


def search_of(args: argparse.Namespace) -> Any:
    """--find-max-load's search (None without it); --concurrency/--rate give its range."""
    kind = args.find_max_load
    if kind is None:
        return None
    other = "rate" if kind == "concurrency" else "concurrency"
    if getattr(args, other):
        raise InferlabError(f"--find-max-load {kind} searches --{kind}; leave out --{other}")
    if kind == "concurrency":
        upper = float(MAX_STREAMS * max(1, args.workers))
        return search_from(args, [float(c) for c in args.concurrency or []], upper)
    return search_from(args, args.rate, MAX_RATE_PER_S)


def stated_floor(args: argparse.Namespace) -> Any:
    """No --floor-* flags: the floor of a local server's own GGUF, or which flag gives MBU
    (one line on stderr, kept as an info warning in the summary)."""
    from inferlab.bench.autofloor import auto_floor

    auto = auto_floor(args.url, os.environ.get(args.api_key_env))
    args.floor_note = auto.line  # said once the server accepts the run (console.progress)
    return auto.floor


def _local_tokenizer(path: Path | None) -> Any:
    if path is None:
        return None
    from inferlab.specs.vocab_bpe import load_counter

    return load_counter(path)


def _inputs(args: argparse.Namespace) -> dict[str, Any]:
    """The files behind the prompts, for the summary's `extra`."""
    out: dict[str, Any] = {}
    if args.prompts is not None:
        out["prompts_file"] = str(args.prompts)
    if args.local_tokenizer is not None:
        out["tokenizer"] = f"{args.local_tokenizer.source}, where the server has no /tokenize"
    return out


def _prompt_words(args: argparse.Namespace) -> tuple[str, ...]:
    if args.prompts is None:
        return ()
    from inferlab.load.prompts import read_prompt_words

    return read_prompt_words(args.prompts)


def run(args: argparse.Namespace) -> int:
    check_sizes(args)
    workload = workload_from(args)
    slo_from(args)  # refuse a bad SLO or search before any folder is made
    search = search_of(args)
    if search is not None and workload.trace is not None:
        raise InferlabError("--find-max-load searches a load: leave out --trace")
    if search is not None and search.kind == "concurrency":  # the pool fits the highest
        from inferlab.load.spec import Level

        top = Level("concurrency", min(search.upper, float(MAX_STREAMS)))
        workload = dataclasses.replace(workload, levels=(top,))
    args.prompt_words = _prompt_words(args)
    args.local_tokenizer = _local_tokenizer(args.tokenizer)
    if args.csv is not None and not args.csv.parent.is_dir():
        raise InferlabError(f"--csv {args.csv}: no folder {args.csv.parent}")
    floor = resolve_floor(args)  # refuse a bad floor before any folder is made
    if floor is None:
        floor = stated_floor(args)
    with claim_run_folder(args.out or default_out(), args.overwrite, args.append_run) as out:
        return _run_in(args, workload, floor, out)


def bench_config(args: argparse.Namespace, workload: Any, floor: Any, out: Path) -> Any:
    """The flags as one BenchConfig (bench/benchmark.py)."""
    from inferlab.bench.benchmark import BenchConfig
    from inferlab.engines.llama_bench import load_engine_bench

    levels = list(workload.levels)
    return BenchConfig(
        url=args.url,
        model=args.model,
        levels=levels,
        requests_per_level=workload.requests_per_level or 0,
        warmup=args.warmup,
        prompt_tokens=workload.mean_tokens()[0],  # the floor compares at the mean lengths
        output_tokens=workload.mean_tokens()[1],
        api=args.api,
        api_key=os.environ.get(args.api_key_env),
        force_length=not args.no_force_length,
        stall_factor=args.stall_factor,
        lag_threshold_s=args.lag_threshold,
        seed=args.seed,
        max_connections=args.max_connections,
        request_timeout_s=args.request_timeout,
        out_dir=out,
        floor=floor,
        command=["inferlab", *sys.argv[1:]],
        scrape=not args.no_scrape,
        metrics_url=args.metrics_url,
        engine=load_engine_bench(args.engine_baseline) if args.engine_baseline else None,
        workers=worker_options(args, levels, floor, workload.mean_tokens()[1]),
        load=workload,
        slo=slo_from(args),
        search=search_of(args),
        max_event_bytes=args.max_event_bytes,
        floor_note=args.floor_note,
        keep_going=args.keep_going,
        prompt_corpus=args.prompt_words,
        tokenizer=args.local_tokenizer,
        extra=_inputs(args),
        extra_body_json=args.extra_body or "",
        headers=tuple(args.header),
    )


def _run_in(args: argparse.Namespace, workload: Any, floor: Any, out: Path) -> int:
    from inferlab.bench.estimate import level_costs, plan_line, search_plan_line
    from inferlab.console.progress import ProgressHooks
    from inferlab.console.sweep import execute

    cfg = bench_config(args, workload, floor, out)
    # --json: stdout holds the JSON alone; the progress, table and paths go to stderr.
    with redirect_stdout(sys.stderr) if args.json else nullcontext():
        hooks = ProgressHooks(plan=None if cfg.search else level_costs(workload, cfg.levels))
        if hooks.plan is not None:  # said once the server accepted the run, before level 1
            hooks.notes.append(plan_line(hooks.plan))
        elif cfg.search is not None:
            s = cfg.search
            n = cfg.requests_per_level
            hooks.notes.append(search_plan_line(s.kind, s.start, s.upper, s.max_levels, n))
        result = execute(cfg, args.no_plots, hooks, args.wide, report=not args.no_report)
    if args.csv is not None:
        from inferlab.report.table_csv import write_level_csv

        print(f"level table: {write_level_csv(result.summary, args.csv)}", file=sys.stderr)
    if args.json:
        print(dumps(result.summary))
    return exit_code(args, result.summary)


def exit_code(args: argparse.Namespace, summary: RunSummary) -> int:
    """1 for a level whose every request failed (unless --keep-going), or a --strict
    failure; 0 otherwise. Each 1 says why in one line."""
    from inferlab.bench.benchmark import all_failed

    failed = [lv.label for lv in summary.levels if all_failed(lv)]
    if failed and not args.keep_going:
        print(
            f"every request of {failed[0]} failed (see the errors above); exit 1 "
            "(--keep-going to go on and exit 0)",
            file=sys.stderr,
        )
        return 1
    found = summary.max_load
    if args.strict and found is not None and found.value is None:
        print("--strict: no level meets the SLO", file=sys.stderr)
        return 1
    if args.strict and strict_failures(summary):
        print("--strict: the run has errors or warnings (see above)", file=sys.stderr)
        return 1
    return 0
