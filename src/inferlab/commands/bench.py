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

from inferlab.bench.sse import DEFAULT_MAX_EVENT_BYTES
from inferlab.commands.common import (
    BANDWIDTH,
    FLOPS,
    TIME,
    real,
    unit_arg,
    whole,
)
from inferlab.commands.slo_args import add_slo_args, search_from, slo_from
from inferlab.errors import InferlabError
from inferlab.jsonio import dumps
from inferlab.load.flags import LoadDefaults, add_load_flags, load_from_args
from inferlab.runfolder import claim_run_folder
from inferlab.specs.stated import cost_from, hardware_from
from inferlab.units import parse_bytes, parse_time

if TYPE_CHECKING:
    from inferlab.summary import RunSummary, RunWarning

MAX_STREAMS = 10_000  # concurrent streams / connections one client process can honestly drive
MAX_WORKERS = 1024  # Ray actors across a cluster
MAX_LOCAL_WORKERS = 64  # processes on this host (~40 MB each)
BENCH_LOAD = LoadDefaults()  # 64 measured requests a level; c = 1..64 unless told


def add_bench_args(p: argparse.ArgumentParser) -> None:
    """Load and workload flags, shared with `demo`."""
    add_load_flags(p, BENCH_LOAD)
    p.add_argument(
        "--request-timeout",
        type=unit_arg(parse_time, positive=True),
        help="end a request still running after this long and record it as failed "
        "(default: 60s + 1s per output token)",
    )
    p.add_argument("--api", choices=["completions", "chat"], default="completions")
    p.add_argument(
        "--stall-factor",
        type=real(1.0, 1e6, above=True),
        default=5.0,
        help="a gap > this x the level's median gap is a stall (5)",
    )
    p.add_argument(
        "--lag-threshold",
        type=TIME,
        default=0.005,
        help="event-loop lag p99 above which the client is saturated (5ms)",
    )
    p.add_argument("--strict", action="store_true", help="exit 1 on any error or warning")
    p.add_argument("--out", type=Path, help="results folder (results/<time>)")
    p.add_argument("--overwrite", action="store_true", help="replace the run already in --out")
    p.add_argument(
        "--append-run", action="store_true", help="add this run beside the one in --out (run-N/)"
    )
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--wide", action="store_true", help="every column in the sweep table")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("bench", help="benchmark an OpenAI-compatible server honestly")
    p.add_argument("--url", required=True, help="OpenAI base URL, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--model", help="served model name (the server's first if omitted)")
    p.add_argument(
        "--max-connections",
        type=whole(1, MAX_STREAMS),
        help="open connections at most; rate mode queues the rest in the client",
    )
    p.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the API key (never written to results)",
    )
    p.add_argument(
        "--no-force-length",
        action="store_true",
        help="do not send ignore_eos/min_tokens (strict OpenAI servers)",
    )
    p.add_argument(
        "--max-event-bytes",
        type=event_bytes_arg,
        default=DEFAULT_MAX_EVENT_BYTES,
        help="an SSE event longer than this fails its request as malformed_stream (1MiB)",
    )
    g = p.add_argument_group("load workers (default: this one process)")
    g.add_argument(
        "--workers",
        type=workers_arg,
        default=1,
        help="worker processes sharing the load (N or auto: sized from the measured ingest "
        "rate and the expected token rate)",
    )
    g.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the workers as Ray actors: auto (RAY_ADDRESS's cluster, else a local one) "
        "or ray://head:10001; needs the ray extra",
    )
    add_bench_args(p)
    m = p.add_argument_group("the server's own metrics (Prometheus /metrics)")
    m.add_argument("--metrics-url", help="where /metrics is (default: the server root's)")
    m.add_argument("--no-scrape", action="store_true", help="do not read the server's /metrics")
    g = p.add_argument_group("floor to compare against")
    g.add_argument("--floor-model", help="preset, config.json or .gguf")
    g.add_argument("--floor-gguf", help="the served GGUF file (real tensor bytes)")
    g.add_argument("--floor-hardware", help="h100-sxm, ..., this-machine")
    g.add_argument("--floor-bandwidth", type=BANDWIDTH, help="e.g. 20GB/s")
    g.add_argument("--floor-flops", type=FLOPS, help="e.g. 500GFLOPS")
    g.add_argument("--floor-weight-dtype", default="bf16")
    g.add_argument("--floor-kv-dtype", default="bf16")
    g.add_argument("--floor-tp", type=whole(1, 4096), default=1)
    p.add_argument(
        "--engine-baseline",
        type=Path,
        help="a folder from `inferlab engine-bench`: split each level into floor/engine/serving",
    )
    add_slo_args(p)
    p.add_argument("--json", action="store_true", help="print summary.json to stdout at the end")
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
    workload = load_from_args(args, BENCH_LOAD)
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


MIN_EVENT_BYTES, MAX_EVENT_BYTES = 1 << 10, 1 << 30


def event_bytes_arg(text: str) -> int:
    """--max-event-bytes: 1KiB (a token's event is a few hundred bytes) to 1GiB."""
    n = unit_arg(parse_bytes, positive=True)(text)
    if not MIN_EVENT_BYTES <= n <= MAX_EVENT_BYTES:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1KiB to 1GiB, e.g. 1MiB")
    return int(n)


def workers_arg(text: str) -> int:
    """--workers: a positive count, or auto (0 here, resolved once the levels are known)."""
    if text == "auto":
        return 0
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of workers or auto") from None
    if not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1 to {MAX_WORKERS} workers, or auto")
    return n


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
    floor = resolve_floor(args)  # refuse a bad floor before any folder is made
    if floor is None:
        floor = stated_floor(args)
    with claim_run_folder(args.out or default_out(), args.overwrite, args.append_run) as out:
        return _run_in(args, workload, floor, out)


def _run_in(args: argparse.Namespace, workload: Any, floor: Any, out: Path) -> int:
    from inferlab.bench.benchmark import BenchConfig
    from inferlab.console.sweep import execute
    from inferlab.engines.llama_bench import load_engine_bench

    engine = load_engine_bench(args.engine_baseline) if args.engine_baseline else None
    levels = list(workload.levels)
    cfg = BenchConfig(
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
        engine=engine,
        workers=worker_options(args, levels, floor, workload.mean_tokens()[1]),
        load=workload,
        slo=slo_from(args),
        search=search_of(args),
        max_event_bytes=args.max_event_bytes,
        floor_note=args.floor_note,
    )
    # --json: stdout holds the JSON alone; the progress, table and paths go to stderr.
    with redirect_stdout(sys.stderr) if args.json else nullcontext():
        result = execute(cfg, args.no_plots, wide=args.wide)
    if args.json:
        print(dumps(result.summary))
    found = result.summary.max_load
    if args.strict and found is not None and found.value is None:
        print("--strict: no level meets the SLO", file=sys.stderr)
        return 1
    if args.strict and strict_failures(result.summary):
        print("--strict: the run has errors or warnings (see above)", file=sys.stderr)
        return 1
    return 0
