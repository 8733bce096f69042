"""`inferlab bench`'s flags read into one BenchConfig: the sizes, the load, the SLO and
search, the floor (stated, or the local server's own GGUF), the workers, each refused in
one line naming the flag before any run folder is made."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.commands.flags.bench import MAX_LOCAL_WORKERS, MAX_STREAMS, SWEEPS
from inferlab.commands.flags.load import load_from_args
from inferlab.commands.flags.paired import check_paired, check_single, url_targets
from inferlab.commands.flags.slo import search_from, slo_from
from inferlab.errors import InferlabError
from inferlab.specs.stated import cost_from, hardware_from

if TYPE_CHECKING:
    from inferlab.bench.benchmark import BenchConfig
    from inferlab.bench.blocks import PairedOptions, PairedTarget
    from inferlab.bench.fleet import WorkerOptions
    from inferlab.load.spec import Level
    from inferlab.load.workload import Workload
    from inferlab.physics.floor import Floor
    from inferlab.slo.search import MaxLoadSearch
    from inferlab.specs.vocab_bpe import BpeCounter


@dataclass(frozen=True, slots=True)
class BenchInputs:
    """What bench's flags name, read and checked before any run folder is made."""

    workload: Workload
    floor: Floor | None
    floor_note: str | None  # how bench found the floor itself, or which flag gives MBU
    prompt_words: tuple[str, ...]  # --prompts FILE's words
    tokenizer: BpeCounter | None  # --tokenizer FILE
    url: str = ""  # --url (a paired run's: the first endpoint's)
    targets: tuple[PairedTarget, ...] = ()  # --url A --url B: a paired run's endpoints


def resolve_floor(args: argparse.Namespace) -> Floor | None:
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


def workload_from(args: argparse.Namespace) -> Workload:
    """The load flags as a Workload (commands/flags/load.py), with bench's own bounds."""
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


def worker_options(
    args: argparse.Namespace, levels: list[Level], floor: Floor | None, output_tokens: int
) -> WorkerOptions:
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


def search_of(args: argparse.Namespace) -> MaxLoadSearch | None:
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


def stated_floor(args: argparse.Namespace, url: str) -> tuple[Floor | None, str | None]:
    """No --floor-* flags: the floor of a local server's own GGUF, and the line that says
    how it was found or which flag gives MBU (said once the server accepts the run, and
    kept as an info warning in the summary)."""
    from inferlab.bench.autofloor import AUTO_FLOOR_DEADLINE_S, auto_floor
    from inferlab.httpbody import query_deadline_s

    deadline_s = min(AUTO_FLOOR_DEADLINE_S, query_deadline_s(args.request_timeout))
    auto = auto_floor(url, os.environ.get(args.api_key_env), deadline_s)
    return auto.floor, auto.line


def _local_tokenizer(path: Path | None) -> BpeCounter | None:
    if path is None:
        return None
    from inferlab.specs.vocab_bpe import load_counter

    return load_counter(path)


def _inputs(args: argparse.Namespace, tokenizer: BpeCounter | None) -> dict[str, str]:
    """The files behind the prompts, for the summary's `extra`."""
    out: dict[str, str] = {}
    if args.prompts is not None:
        out["prompts_file"] = str(args.prompts)
    if tokenizer is not None:
        out["tokenizer"] = f"{tokenizer.source}, where the server has no /tokenize"
    return out


def _prompt_words(args: argparse.Namespace) -> tuple[str, ...]:
    if args.prompts is None:
        return ()
    from inferlab.load.prompts import read_prompt_words

    return read_prompt_words(args.prompts)


def bench_config(args: argparse.Namespace, given: BenchInputs, out: Path) -> BenchConfig:
    """The flags as one BenchConfig (bench/benchmark.py)."""
    from inferlab.bench.benchmark import BenchConfig
    from inferlab.engines.llama_bench import load_engine_bench

    workload, floor = given.workload, given.floor
    return BenchConfig(
        url=given.url,
        model=args.model,
        load=workload,
        api=args.api,
        api_key=os.environ.get(args.api_key_env),
        force_length=not args.no_force_length,
        stall_factor=args.stall_factor,
        lag_threshold_s=args.lag_threshold,
        max_connections=args.max_connections,
        request_timeout_s=args.request_timeout,
        out_dir=out,
        floor=floor,
        command=["inferlab", *sys.argv[1:]],
        scrape=not args.no_scrape,
        metrics_url=args.metrics_url,
        engine=load_engine_bench(args.engine_baseline) if args.engine_baseline else None,
        workers=worker_options(args, list(workload.levels), floor, workload.mean_tokens()[1]),
        slo=slo_from(args),
        search=search_of(args),
        max_event_bytes=args.max_event_bytes,
        floor_note=given.floor_note,
        keep_going=args.keep_going,
        settle_slots=args.settle_slots,
        prompt_corpus=given.prompt_words,
        tokenizer=given.tokenizer,
        extra=_inputs(args, given.tokenizer),
        extra_body_json=args.extra_body or "",
        headers=tuple(args.header),
        repeats=getattr(args, "repeat", 1),
        canary=not args.no_canary,
        paired=_paired_options(args, given.targets),
    )


def _paired_options(
    args: argparse.Namespace, targets: tuple[PairedTarget, ...]
) -> PairedOptions | None:
    """--url A --url B's endpoints and --block-requests; None for one server."""
    if not targets:
        return None
    from inferlab.bench.blocks import DEFAULT_BLOCK_REQUESTS, PairedOptions

    return PairedOptions(targets, args.block_requests or DEFAULT_BLOCK_REQUESTS)


def checked_inputs(args: argparse.Namespace) -> BenchInputs:
    """The flags checked and read (workload, floor, prompt files) before any run folder is
    made: a bad one is refused in one line."""
    check_sizes(args)
    workload = workload_from(args)
    targets = url_targets(args.url)
    if targets:
        check_paired(args, workload)
    else:
        check_single(args)
    url = targets[0].url if targets else args.url[0]
    slo_from(args)  # refuse a bad SLO or search before any folder is made
    search = search_of(args)
    if search is not None and workload.trace is not None:
        raise InferlabError("--find-max-load searches a load: leave out --trace")
    if search is not None and getattr(args, "repeat", 1) > 1:
        raise InferlabError("--find-max-load picks its levels as it goes: leave out --repeat")
    if search is not None and search.kind == "concurrency":  # the pool fits the highest
        from inferlab.load.spec import Level

        top = Level("concurrency", min(search.upper, float(MAX_STREAMS)))
        workload = dataclasses.replace(workload, levels=(top,))
    words, tokenizer = _prompt_words(args), _local_tokenizer(args.tokenizer)
    if args.csv is not None and not args.csv.parent.is_dir():
        raise InferlabError(f"--csv {args.csv}: no folder {args.csv.parent}")
    floor = resolve_floor(args)  # refuse a bad floor before any folder is made
    note = None
    if floor is None:
        floor, note = stated_floor(args, url) if not targets else (None, PAIRED_NO_FLOOR)
    return BenchInputs(workload, floor, note, words, tokenizer, url, targets)


# A paired run's endpoints may serve different models (a quantisation): no one floor is
# theirs, so bench finds none itself; a stated one applies to every endpoint.
PAIRED_NO_FLOOR = (
    "no floor (MBU): a paired run does not find one itself, as its endpoints may serve "
    "different models; --floor-gguf FILE (or --floor-model and --floor-hardware) states one "
    "for every endpoint"
)
