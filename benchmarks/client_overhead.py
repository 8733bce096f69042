"""Client overhead: how many tokens/s the bench client ingests, and how late it stamps them.

Part 1 chose the HTTP library: the same streaming loop (POST, read chunks,
SSE-parse, stamp each event) on aiohttp and on httpx, at concurrency 64,
tokens ingested per second of client CPU.

Against the scripted fake server emitting tokens as fast as it can (TPOT 0),
at concurrency 1, 64 and 512, in one run:
  - tokens per second of client CPU (the client's ingest rate on one core),
  - per-token lateness: the client's stamp minus the server's own write time
    (both read CLOCK_MONOTONIC), p50 and p99: the latency the client adds,
  - the event loop used (uvloop when installed, else asyncio).

    uv run python benchmarks/client_overhead.py [--tokens 200] [--requests 64]

With --metrics vllm (or llamacpp) the fake server also publishes /metrics, so
the bench scrapes it at 4 Hz beside every level: run both ways to see whether
scraping moves the client's numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from inferlab.bench.benchmark import BenchConfig, event_loop_runner, run_benchmark
from inferlab.bench.fleet import WorkerOptions
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.records import read_records
from inferlab.testing.fake_server import running_fake_server


def one(
    url: str, concurrency: int, requests: int, tokens: int, out: Path, workers: Any = None
) -> dict[str, float]:
    cfg = BenchConfig(
        url=url,
        model="fake",
        load=Workload.fixed(
            prompt_tokens=8,
            output_tokens=tokens,
            levels=[Level("concurrency", concurrency)],
            requests_per_level=requests,
            warmup=0,
        ),
        out_dir=out,
        workers=workers or WorkerOptions(),
    )
    driver_cpu0 = time.process_time()
    res = event_loop_runner()(run_benchmark(cfg))
    driver_cpu = time.process_time() - driver_cpu0
    with urllib.request.urlopen(url.replace("/v1", "/debug/log")) as r:
        log = json.load(r)
    summary = res.summary.to_json()
    origin = summary["clock"]["origin_ns"]
    late: list[float] = []
    for rec in read_records(res.records_path):
        w = np.asarray(log[rec.prompt_sha1]["write_ns"], dtype=float)
        late.extend((np.asarray(rec.event_ns, dtype=float) + origin - w) / 1e6)
    lv = summary["levels"][0]
    cpu = lv["client"]["cpu_s"]
    if lv.get("workers"):  # the workers' own CPU, plus the driver that merged their records
        cpu += driver_cpu
    return {
        "concurrency": concurrency,
        "tokens": lv["output_tokens"],
        "client_cpu_s": cpu,
        "tokens_per_cpu_s": lv["output_tokens"] / cpu if cpu else 0.0,
        "tokens_per_wall_s": lv["output_tokens_per_s_total"],
        "late_p50_ms": float(np.percentile(late, 50)),
        "late_p99_ms": float(np.percentile(late, 99)),
        "loop_lag_p99_ms": lv["client"]["loop_lag_p99_s"] * 1e3,
        "failed": lv["requests_failed"],
    }


async def _ingest(lib: str, url: str, concurrency: int, requests: int, tokens: int) -> int:
    """Stream `requests` completions through `lib`; return the events parsed."""
    from inferlab.bench.sse import SSEParser

    body = {"model": "fake", "prompt": "a b c", "max_tokens": tokens, "stream": True}
    count = 0
    queue = iter(range(requests))

    async def one_aiohttp(session: Any) -> None:
        nonlocal count
        for _ in queue:
            parser = SSEParser()
            async with session.post(f"{url}/completions", json=body) as r:
                async for chunk in r.content.iter_any():
                    for _ev in parser.feed(chunk):
                        time.perf_counter_ns()
                        count += 1

    async def one_httpx(client: Any) -> None:
        nonlocal count
        for _ in queue:
            parser = SSEParser()
            async with client.stream("POST", f"{url}/completions", json=body) as r:
                async for chunk in r.aiter_raw():
                    for _ev in parser.feed(chunk):
                        time.perf_counter_ns()
                        count += 1

    if lib == "aiohttp":
        import aiohttp

        conn = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=conn) as session:
            await asyncio.gather(*(one_aiohttp(session) for _ in range(concurrency)))
    else:
        import httpx

        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=60) as client:
            await asyncio.gather(*(one_httpx(client) for _ in range(concurrency)))
    return count


def compare_libraries(url: str, tokens: int) -> list[tuple[str, float]]:
    out = []
    for lib in ("aiohttp", "httpx"):
        cpu = time.process_time()
        events = event_loop_runner()(_ingest(lib, url, 64, 128, tokens))
        out.append((lib, events / (time.process_time() - cpu)))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=200)
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--metrics", choices=["none", "llamacpp", "vllm"], default="none")
    p.add_argument(
        "--workers",
        action="store_true",
        help="instead: one process vs --workers 2 vs Ray (2 actors) at c=512 and c=2048",
    )
    a = p.parse_args()
    if a.workers:
        workers_table(a.tokens)
        return
    rows = []
    with (
        running_fake_server(ttft=0.0, tpot=0.0, slow_every=0, metrics=a.metrics) as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        libs = compare_libraries(url, a.tokens)
        for c in (1, 64, 512):
            n = max(a.requests, c)
            t = time.perf_counter()
            row = one(url, c, n, a.tokens, Path(tmp) / f"c{c}")
            row["wall_s"] = time.perf_counter() - t
            rows.append(row)
    try:
        import uvloop

        loop = f"uvloop {uvloop.__version__}"
    except ImportError:
        loop = "asyncio"
    print("HTTP library, same streaming loop at concurrency 64 (events per client CPU-second):")
    for lib, rate in libs:
        print(f"  {lib:<8} {rate:>10.0f}")
    print(
        f"client overhead, fake server at full speed, {a.tokens} tokens/request, loop: {loop}, "
        f"/metrics: {a.metrics}"
    )
    print(
        f"{'conc':>5} {'tokens':>8} {'tok/CPU-s':>10} {'tok/wall-s':>11} {'late p50 ms':>12} "
        f"{'late p99 ms':>12} {'lag p99 ms':>11} {'failed':>7}"
    )
    for r in rows:
        print(
            f"{r['concurrency']:>5} {r['tokens']:>8.0f} {r['tokens_per_cpu_s']:>10.0f} "
            f"{r['tokens_per_wall_s']:>11.0f} {r['late_p50_ms']:>12.2f} {r['late_p99_ms']:>12.2f} "
            f"{r['loop_lag_p99_ms']:>11.2f} {r['failed']:>7.0f}"
        )
    print(
        "tok/CPU-s: tokens ingested per second of client CPU (one core); late: client stamp "
        "minus the server's write time, i.e. the latency the client adds per token."
    )


WORKER_SETUPS = (
    ("in-process", None),
    ("--workers 2", WorkerOptions(2)),
    ("--ray auto (2)", WorkerOptions(2, "auto")),
)


def workers_table(tokens: int) -> None:
    """Events per client CPU-second and added latency, one process vs workers, side by side."""
    rows = []
    with (
        running_fake_server(ttft=0.0, tpot=0.0, slow_every=0) as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for c in (512, 2048):
            for name, opts in WORKER_SETUPS:
                try:
                    row = one(url, c, c, tokens, Path(tmp) / f"{name[:6]}{c}", opts)
                except Exception as e:  # e.g. Ray missing or its cluster would not start here
                    print(f"  {name} at c={c}: not measured ({type(e).__name__}: {e})")
                    continue
                rows.append((name, row))
    print(f"load workers, fake server at full speed, {tokens} tokens/request")
    print(f"{'setup':<15} {'conc':>5} {'tok/CPU-s':>10} {'late p50 ms':>12} {'late p99 ms':>12}")
    for name, r in rows:
        print(
            f"{name:<15} {r['concurrency']:>5} {r['tokens_per_cpu_s']:>10.0f} "
            f"{r['late_p50_ms']:>12.2f} {r['late_p99_ms']:>12.2f}"
        )
    print("tok/CPU-s counts every worker's CPU and the driver's (which merges the records).")


if __name__ == "__main__":
    main()
