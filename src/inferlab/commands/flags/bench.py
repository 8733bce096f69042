"""`inferlab bench`'s flags, and the ones `demo` shares: each with its default in its help."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from inferlab.bench.sse import DEFAULT_MAX_EVENT_BYTES
from inferlab.commands.flags.argtypes import BANDWIDTH, FLOPS, TIME, real, unit_arg, whole
from inferlab.commands.flags.load import LoadDefaults, add_load_flags
from inferlab.commands.flags.paired import add_paired_args
from inferlab.commands.flags.slo import add_slo_args
from inferlab.units import parse_bytes, parse_duration

MAX_STREAMS = 10_000  # concurrent streams / connections one client process can honestly drive
MAX_WORKERS = 1024  # Ray actors across a cluster
MAX_LOCAL_WORKERS = 64  # processes on this host (~40 MB each)
# A bare `bench --url URL` finishes within minutes on the bundled server (measured: see the
# README); the full sweep is asked for by name (--sweep full).
BENCH_LOAD = LoadDefaults(output_tokens="64", requests_per_level=16, concurrency=(1, 2, 4))
FULL_SWEEP = LoadDefaults(output_tokens="64", requests_per_level=64)  # c = 1,2,4,...,64
SWEEPS = {"quick": BENCH_LOAD, "full": FULL_SWEEP}


def add_bench_args(p: argparse.ArgumentParser) -> None:
    """Load and workload flags, the request deadline, the honesty checks, the run folder."""
    add_load_flags(p, BENCH_LOAD)
    p.add_argument(
        "--request-timeout",
        type=unit_arg(parse_duration, positive=True),
        help="end a request still running after this long and record it as failed "
        "(default: 60s + 1s per output token)",
    )
    p.add_argument(
        "--api",
        choices=["completions", "chat"],
        default="completions",
        help="POST /completions (the prompt as sent) or /chat/completions (wrapped in the "
        "server's chat template) (completions)",
    )
    add_honesty_args(p)
    add_run_folder_args(p)
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument("--wide", action="store_true", help="every column in the sweep table")


def add_honesty_args(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """What counts as a stall or a saturated client, and --strict (bench and demo)."""
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


def add_run_folder_args(p: argparse.ArgumentParser) -> None:
    """--out, --overwrite, --append-run (bench and demo)."""
    p.add_argument("--out", type=Path, help="results folder (results/run-<date>-<time>)")
    p.add_argument("--overwrite", action="store_true", help="replace the run already in --out")
    p.add_argument(
        "--append-run", action="store_true", help="add this run beside the one in --out (run-N/)"
    )


def add_parser_args(p: argparse.ArgumentParser) -> None:
    """Every flag of `inferlab bench`."""
    add_url_arg(p)
    add_request_args(p)
    add_worker_args(p)
    p.add_argument(
        "--sweep",
        choices=sorted(SWEEPS),
        default="quick",
        help="the levels and requests when --concurrency / --requests-per-level are not "
        "given: quick = c=1,2,4 x 16 requests; full = c=1,2,4,...,64 x 64 requests "
        "(half an hour on a CPU) (quick)",
    )
    add_bench_args(p)
    p.add_argument(
        "--repeat",
        type=whole(1, MAX_REPEATS),
        default=1,
        metavar="N",
        help="run every level N times, interleaved (c=1, c=2, c=4, c=1, ...), each time with "
        "fresh prompts; summary.json keeps each repeat, and every percentile's 95 %% interval "
        "then covers the machine's drift between runs (N times as long) (1)",
    )
    p.add_argument(
        "--no-canary",
        action="store_true",
        help="send no drift canary (default: one fixed 16-token request 3 times at rest "
        "before the first level and once after every level, its TPOT the machine's speed; "
        "a level measured while it moved beyond its own noise is warned machine_drift)",
    )
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="go on past a level whose every request failed, and exit 0 "
        "(default: stop there and exit 1)",
    )
    p.add_argument(
        "--settle-slots",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="llama-server: before each level and repeat, one 1-token request pinned to each "
        "slot, highest id first, so each starts from an idle server's slot order (the one the "
        "simulator predicts from), not the one the level before left. On by default where the "
        "server is llama-server and states its slots; --settle-slots refuses any other "
        "server; --no-settle-slots: never",
    )
    m = p.add_argument_group("the server's own metrics (Prometheus /metrics)")
    m.add_argument("--metrics-url", help="where /metrics is (default: the server root's)")
    m.add_argument("--no-scrape", action="store_true", help="do not read the server's /metrics")
    add_floor_args(p)
    add_slo_args(p)
    p.add_argument("--no-report", action="store_true", help="write no report.html")
    p.add_argument(
        "--csv", metavar="FILE", type=Path, help="also write the level table as CSV to FILE"
    )
    p.add_argument("--json", action="store_true", help="print summary.json to stdout at the end")
    add_paired_args(p)


def add_url_arg(p: argparse.ArgumentParser) -> None:
    """--url, once (one server) or twice or more (a paired run: commands/flags/paired.py)."""
    p.add_argument(
        "--url",
        required=True,
        action="append",
        help="OpenAI base URL, e.g. http://127.0.0.1:8080/v1; twice or more (label=URL, or "
        "bare: base, new) measures them paired: each level in short blocks alternating the "
        "endpoints, B against A per block pair (docs/bench.md)",
    )


def add_request_args(p: argparse.ArgumentParser) -> None:
    """What each request carries: the model name, the key, the body, the prompts' text."""
    p.add_argument(
        "--served-model",
        dest="model",
        metavar="NAME",
        help="the model name sent in each request (the first the server lists)",
    )
    # --model was this flag's name; elsewhere --model names a spec (preset, config, GGUF),
    # as --floor-model does here. Kept, hidden, for one release.
    p.add_argument("--model", dest="model", help=argparse.SUPPRESS)
    p.add_argument(
        "--max-connections",
        type=whole(1, MAX_STREAMS),
        help="open connections at most; rate mode queues the rest in the client "
        "(the highest concurrency, at least 64, + 8)",
    )
    p.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="environment variable holding the API key, never written to results (OPENAI_API_KEY)",
    )
    p.add_argument(
        "--no-force-length",
        action="store_true",
        help="do not send ignore_eos/min_tokens (strict OpenAI servers)",
    )
    p.add_argument(
        "--prompts",
        metavar="FILE",
        type=Path,
        help='real text for the prompts: a JSONL file of {"prompt": ...} lines; each prompt '
        "is cut from its words to --prompt-tokens (default: a list of common words)",
    )
    p.add_argument(
        "--tokenizer",
        metavar="FILE",
        type=Path,
        help="the model's .gguf or tokenizer.json (byte-level BPE): counts prompt tokens "
        "where the server has no /tokenize (default: the server's /tokenize only)",
    )
    add_body_args(p)


def add_body_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--extra-body",
        metavar="JSON",
        type=extra_body_arg,
        help="fields merged into every request body, e.g. '{\"top_k\": 1}' (none)",
    )
    p.add_argument(
        "--header",
        metavar="K:V",
        action="append",
        type=header_arg,
        default=[],
        help="an HTTP header sent with every request, repeatable, e.g. 'X-Team: a' (none)",
    )
    p.add_argument(
        "--max-event-bytes",
        type=event_bytes_arg,
        default=DEFAULT_MAX_EVENT_BYTES,
        help="an SSE event longer than this fails its request as malformed_stream (1MiB)",
    )


def add_worker_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("load workers (default: this one process)")
    g.add_argument(
        "--workers",
        type=workers_arg,
        default=1,
        help="worker processes sharing the load: N or auto, sized from the measured ingest "
        "rate and the expected token rate (1)",
    )
    g.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the workers as Ray actors: auto (RAY_ADDRESS's cluster, else a local one) "
        "or ray://head:10001; needs the ray extra (default: no Ray)",
    )


def add_floor_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "floor to compare against (default: a local llama-server's own GGUF, found by bench)"
    )
    g.add_argument("--floor-model", help="preset, config.json or .gguf (none)")
    g.add_argument("--floor-gguf", help="the served GGUF file: real tensor bytes (none)")
    g.add_argument("--floor-hardware", help="h100-sxm, ..., this-machine (none)")
    g.add_argument("--floor-bandwidth", type=BANDWIDTH, help="e.g. 20GB/s (the hardware's)")
    g.add_argument("--floor-flops", type=FLOPS, help="e.g. 500GFLOPS (the hardware's)")
    g.add_argument("--floor-weight-dtype", default="bf16", help="weights' dtype (bf16)")
    g.add_argument("--floor-kv-dtype", default="bf16", help="KV cache dtype (bf16)")
    g.add_argument("--floor-tp", type=whole(1, 4096), default=1, help="tensor-parallel (1)")
    p.add_argument(
        "--engine-baseline",
        type=Path,
        help="a folder from `inferlab engine-bench`: split each level into floor/engine/serving "
        "(none)",
    )


MIN_EVENT_BYTES, MAX_EVENT_BYTES = 1 << 10, 1 << 30


def event_bytes_arg(text: str) -> int:
    """--max-event-bytes: 1KiB (a token's event is a few hundred bytes) to 1GiB."""
    n = unit_arg(parse_bytes, positive=True)(text)
    if not MIN_EVENT_BYTES <= n <= MAX_EVENT_BYTES:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1KiB to 1GiB, e.g. 1MiB")
    return int(n)


# The body fields bench itself sets to measure honestly: an --extra-body may not replace them.
OWN_BODY_KEYS = ("model", "prompt", "messages", "stream", "stream_options", "max_tokens")


def extra_body_arg(text: str) -> str:
    """--extra-body: a JSON object, without the fields bench sets itself; kept as text."""
    try:
        body = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON ({e})") from None
    if not isinstance(body, dict):
        raise argparse.ArgumentTypeError(f"{text!r}: give a JSON object, e.g. '{{\"top_k\": 1}}'")
    own = [k for k in OWN_BODY_KEYS if k in body]
    if own:
        raise argparse.ArgumentTypeError(
            f"{', '.join(own)}: bench sets these itself (use --served-model, --output-tokens)"
        )
    return json.dumps(body)


def header_arg(text: str) -> tuple[str, str]:
    """--header 'K: V' -> (K, V)."""
    name, colon, value = text.partition(":")
    if not colon or not name.strip() or any(c in name for c in " \t\r\n") or "\n" in value:
        raise argparse.ArgumentTypeError(f"{text!r}: write NAME:VALUE, e.g. 'X-Team: a'")
    return name.strip(), value.strip()


MAX_REPEATS = 100


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
