"""`inferlab watch`: live MBU/MFU of a running server — terminal, web page, Prometheus, record."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.commands.flags.argtypes import TIME
from inferlab.commands.flags.common import add_hardware, add_model
from inferlab.errors import InferlabError
from inferlab.specs.stated import cost_from, hardware_from

if TYPE_CHECKING:
    from inferlab.engines.result import EngineBench
    from inferlab.physics.floor import Floor
    from inferlab.specs.hardware import HardwareSpec

DEFAULT_START_TIMEOUT_S = 60.0  # watch/loop.py's default, stated here to keep --help light


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("watch", help="live MBU, MFU, tok/s, batch, KV, TTFT/TPOT of a server")
    p.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8080")
    p.add_argument("--metrics-url", help="its Prometheus metrics, if not URL/metrics")
    add_model(p)
    p.add_argument("--gguf", type=Path, help="the GGUF the server runs (same as --model FILE)")
    add_hardware(p)
    p.add_argument("--context", type=int, help="tokens per running sequence, where not published")
    p.add_argument(
        "--engine-baseline",
        type=Path,
        help="an engine-bench folder: the reading splits kernels from serving, as the report",
    )
    p.add_argument("--interval", type=TIME, default=1.0, help="one scrape per interval (1s)")
    p.add_argument("--window", type=TIME, default=10.0, help="rates over this window (10s)")
    p.add_argument("--duration", type=TIME, help="stop after this long, e.g. 10min (Ctrl-C)")
    p.add_argument("--record", type=Path, help="append one JSON line per interval to FILE")
    p.add_argument("--web", type=int, metavar="PORT", help="serve a live page on 127.0.0.1:PORT")
    p.add_argument("--prometheus", type=int, metavar="PORT", help="inferlab_* gauges on PORT")
    p.add_argument("--no-tui", action="store_true", help="headless: record/web/exporter only")
    p.add_argument("--timeout", type=TIME, default=2.0, help="per-scrape timeout (2s)")
    p.add_argument(
        "--start-timeout",
        type=TIME,
        default=DEFAULT_START_TIMEOUT_S,
        help="wait this long for a server not up yet, then exit 2 (60s; --duration if shorter)",
    )
    p.set_defaults(run=run)


def _check(args: argparse.Namespace) -> None:
    if args.interval < 0.25:
        raise InferlabError("--interval must be at least 250ms (the view redraws at most 4 Hz)")
    if args.window < args.interval:
        raise InferlabError("--window must be at least one --interval")
    if args.context is not None and args.context < 0:
        raise InferlabError("--context must be >= 0 tokens")
    for flag, port in (("--web", args.web), ("--prometheus", args.prometheus)):
        if port is not None and not 0 <= port <= 65535:
            raise InferlabError(f"{flag} {port}: a port is 0..65535")
    if args.gguf is not None and args.model:
        raise InferlabError("give --model or --gguf, not both")


def physics_from(args: argparse.Namespace) -> Floor | Callable[[], Floor]:
    """The floor's figures now, or (no model given) how to get them from the model the
    server names, once it answers: watch waits for a server that is not up yet."""
    from inferlab.physics.floor import Floor
    from inferlab.watch.served import served_model

    model = str(args.gguf) if args.gguf is not None else args.model
    if args.gguf is not None and not args.gguf.is_file():
        raise InferlabError(f"--gguf {args.gguf}: no such file")
    engine = _engine(args.engine_baseline)  # a bad folder is said before any wait

    def with_model(model: str | None) -> Floor:
        cost = cost_from(
            model,
            weight_dtype=args.weight_dtype,
            kv_dtype=args.kv_dtype,
            weight_bytes=args.weight_bytes,
            kv_bytes_per_token=args.kv_bytes_per_token,
            params=args.params,
        )
        return _beside(Floor(cost, hw(), devices=args.tp, context_tokens=args.context), engine)

    def hw() -> HardwareSpec:
        return hardware_from(args.hardware, args.bandwidth, args.flops, args.memory, args.tp)

    if model or args.weight_bytes is not None:
        return with_model(model)
    hw()  # a missing --hardware is said before any wait
    return lambda: with_model(served_model(args.url, args.timeout))


def _engine(path: Path | None) -> EngineBench | None:
    """The engine alone (engine-bench), for the verdict (metrics/verdict.py), if given."""
    if path is None:
        return None
    from inferlab.engines.llama_bench import load_engine_bench

    return load_engine_bench(path)


def _beside(floor: Floor, engine: EngineBench | None) -> Floor:
    from inferlab.watch.derive import EngineFloor

    return EngineFloor.of(floor, engine)


def metrics_url(args: argparse.Namespace) -> str:
    from inferlab.address import metrics_url as default_metrics_url

    return args.metrics_url or default_metrics_url(args.url)


def run(args: argparse.Namespace) -> int:
    from inferlab.watch.devutil import probe_for
    from inferlab.watch.loop import WatchConfig, run_watch
    from inferlab.watch.scraping import scraper

    _check(args)
    ph = physics_from(args)
    cfg = WatchConfig(
        url=args.url,
        interval_s=args.interval,
        window_s=args.window,
        duration_s=args.duration,
        record=args.record,
        web_port=args.web,
        prometheus_port=args.prometheus,
        tui=not args.no_tui and sys.stdout.isatty(),
        start_timeout_s=args.start_timeout,
    )
    result = run_watch(cfg, ph, scraper(metrics_url(args), args.timeout), probe_for(args.url))
    tail = f"; {result.record_lines} lines in {args.record}" if args.record else ""
    if result.waited_s > 0:
        tail += f"; the server first answered after {result.waited_s:.1f} s"
    stop = "stopped (Ctrl-C)" if result.interrupted else "done"
    print(f"inferlab watch: {stop} after {result.frames} intervals{tail}", file=sys.stderr)
    return 0
