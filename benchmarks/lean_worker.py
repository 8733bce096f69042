"""Lean worker: the client's CPU while it waits, per token, and for a whole small sweep.

Three parts, in one run, on this machine:

1. Waiting: one request to the scripted fake server with a 12 s TTFT (nothing
   arrives); the level's client CPU as a share of one core. Target <= 1 %. Twice:
   without /metrics, and scraping a vLLM-sized /metrics at 4 Hz beside it.
2. Per token, at c=1 on the server (8 requests of 128 tokens), three clients side
   by side: a raw-socket floor (asyncio protocol on uvloop: read, split events,
   json.loads; no stamps, no records, Connection: close), the minimal aiohttp
   loop (POST, iter_any, json.loads), and inferlab's own level (stamps, records,
   lag sampler; /metrics scraping off). CPU per token and share of a core.
3. Whole process: `inferlab bench --concurrency 1,4 --requests-per-level 8
   --output-tokens 128` as a child process (its rusage), with and without /metrics
   scraping, beside a child that only starts Python and imports what bench imports.
   The floor line is that start-up plus every streamed token at part 2's raw-socket
   CPU per token: no Python client of this shape can go below it here.

The server is the bundled llama.cpp one (SmolLM2-135M, started here) unless --url
names another. On a 2-core cloud VM a socket wake-up costs ~0.2 ms of CPU (the
kernel's share), so part 2's floor is the machine's, not Python's.

    uv run python benchmarks/lean_worker.py [--url http://127.0.0.1:8080/v1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp

from inferlab.bench.benchmark import BenchConfig, event_loop_runner, run_benchmark
from inferlab.engines.llama_server import LlamaServer, ServerOptions
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.records import read_records
from inferlab.testing.fake_server import running_fake_server

TOKENS, REQUESTS = 128, 8
PROMPT = "Tell me a long story about a lighthouse keeper. " * 2


def level_cpu(
    url: str, out: Path, requests: int, tokens: int, scrape: bool = False
) -> tuple[float, float, int]:
    """(client CPU s, wall s, tokens) of one c=1 level run by inferlab."""
    cfg = BenchConfig(
        url=url,
        model=None,
        load=Workload.fixed(
            prompt_tokens=16,
            output_tokens=tokens,
            levels=[Level("concurrency", 1)],
            requests_per_level=requests,
            warmup=0,
        ),
        out_dir=out,
        scrape=scrape,
    )
    res = event_loop_runner()(run_benchmark(cfg))
    lv = res.summary.levels[0]
    assert lv.client is not None
    return lv.client.cpu_s, lv.client.wall_s, lv.output_tokens


def body(model: str) -> dict[str, object]:
    return {
        "model": model,
        "prompt": PROMPT,
        "max_tokens": TOKENS,
        "stream": True,
        "ignore_eos": True,
        "temperature": 0.0,
    }


class _Floor(asyncio.Protocol):
    """Reads a streamed response and json-decodes each event: nothing more."""

    def __init__(self, done: asyncio.Future[int]) -> None:
        self.done, self.buf, self.events = done, b"", 0

    def data_received(self, data: bytes) -> None:
        self.buf += data
        *events, self.buf = self.buf.split(b"\n\n")
        for ev in events:
            i = ev.find(b"data: {")
            if i >= 0:
                json.loads(ev[i + 6 :])
                self.events += 1

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(self.events)


async def floor_one(url: str, model: str) -> int:
    loop = asyncio.get_running_loop()
    u = urlsplit(url)
    payload = json.dumps(body(model)).encode()
    head = (
        f"POST {u.path.rstrip('/')}/completions HTTP/1.1\r\nHost: {u.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    done: asyncio.Future[int] = loop.create_future()
    host, port = u.hostname or "127.0.0.1", u.port or 80
    transport, _ = await loop.create_connection(lambda: _Floor(done), host, port)
    transport.write(head + payload)
    return await asyncio.wait_for(done, 120)


async def aiohttp_one(session: aiohttp.ClientSession, url: str, model: str) -> int:
    events = 0
    async with session.post(f"{url}/completions", json=body(model)) as r:
        async for chunk in r.content.iter_any():
            for ev in chunk.split(b"\n\n"):
                if ev.startswith(b"data: {"):
                    json.loads(ev[6:])
                    events += 1
    return events


def timed(make: Callable[[], Awaitable[int]], n: int) -> tuple[float, float, int]:
    """(CPU s, wall s, events) of n sequential requests, after one untimed."""

    async def main() -> tuple[float, float, int]:
        await make()
        c0, w0, events = time.process_time(), time.perf_counter(), 0
        for _ in range(n):
            events += await make()
        return time.process_time() - c0, time.perf_counter() - w0, events

    result: tuple[float, float, int] = event_loop_runner()(main())
    return result


def aiohttp_timed(url: str, model: str, n: int) -> tuple[float, float, int]:
    async def main() -> tuple[float, float, int]:
        conn = aiohttp.TCPConnector(force_close=True)  # llama-server drops idle keep-alives
        async with aiohttp.ClientSession(connector=conn) as s:
            await aiohttp_one(s, url, model)
            c0, w0, events = time.process_time(), time.perf_counter(), 0
            for _ in range(n):
                events += await aiohttp_one(s, url, model)
            return time.process_time() - c0, time.perf_counter() - w0, events

    result: tuple[float, float, int] = event_loop_runner()(main())
    return result


def child_cpu_s(cmd: list[str]) -> tuple[float, int]:
    """CPU seconds (user + system) of a child process, and its exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}  # time the run, not compiling
    rc = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    ).returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), rc


def sweep_cpu_s(url: str, out: Path, *extra: str) -> tuple[float, int]:
    """CPU seconds of `inferlab bench` over the small sweep in a child, and its tokens."""
    sweep = [sys.executable, "-m", "inferlab.cli", "bench", "--url", url, "--concurrency", "1,4"]
    sweep += ["--requests-per-level", str(REQUESTS), "--output-tokens", str(TOKENS)]
    cpu, rc = child_cpu_s([*sweep, "--no-plots", "--out", str(out), *extra])
    if rc != 0:
        raise SystemExit(f"inferlab bench exited {rc}")
    tokens = sum(sum(r.event_tokens) for r in read_records(out / "records.jsonl"))
    return cpu, tokens  # warm-up requests included: the process streamed them too


def whole_process(url: str, out: Path, floor_s_per_token: float) -> list[tuple[str, float]]:
    imports = "import inferlab.cli, inferlab.console.sweep, uvloop, rich.progress"
    child_cpu_s([sys.executable, "-c", imports])  # warm the bytecode cache first
    start, _ = child_cpu_s([sys.executable, "-c", imports])
    whole, tokens = sweep_cpu_s(url, out / "sweep")
    quiet, _ = sweep_cpu_s(url, out / "sweep-no-scrape", "--no-scrape")
    return [
        ("start + imports", start),
        ("the sweep itself", whole - start),
        ("whole", whole),
        ("whole, no /metrics", quiet),
        (f"floor ({tokens} tok)", start + tokens * floor_s_per_token),
    ]


@contextmanager
def server(url: str | None) -> Iterator[str]:
    if url:
        yield url.rstrip("/")
        return
    with LlamaServer(ServerOptions(parallel=4, ctx_per_slot=512)) as srv:
        yield srv.base_url


def model_of(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(f"{url}/models", timeout=10) as r:
        return str(json.load(r)["data"][0]["id"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", help="an OpenAI base URL (default: start the bundled llama-server)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for metrics in ("none", "vllm"):  # vllm: a vLLM-sized /metrics scraped at 4 Hz
            with running_fake_server(ttft=12.0, tpot=0.0125, slow_every=0, metrics=metrics) as f:
                cpu, wall, _ = level_cpu(f, out / f"waiting-{metrics}", 1, 4, scrape=True)
            print(
                f"waiting on a 12 s TTFT, /metrics {metrics}: {cpu:.3f} CPU-s in {wall:.1f} s"
                f" = {cpu / wall:.2%} of a core"
            )
        with server(a.url) as url:
            model = model_of(url)
            rows = [
                ("raw socket floor", timed(lambda: floor_one(url, model), REQUESTS)),
                ("minimal aiohttp", aiohttp_timed(url, model, REQUESTS)),
                ("inferlab level", level_cpu(url, out / "level", REQUESTS, TOKENS)),
            ]
            print(f"\nc=1, {REQUESTS} x {TOKENS} tokens on {url}")
            print(f"{'client':<18}{'CPU s':>7}{'tokens':>8}{'ms/token':>10}{'% core':>8}")
            for name, (cpu, wall, tokens) in rows:
                print(
                    f"{name:<18}{cpu:>7.3f}{tokens:>8}{cpu / tokens * 1e3:>10.3f}{cpu / wall:>8.2%}"
                )
            print("\nwhole process, c=1,4; 8 requests; 128 tokens (CPU s); floor: start +")
            print("imports + every streamed token at the raw-socket floor's CPU per token")
            floor_cpu, _, floor_tokens = rows[0][1]
            for name, s in whole_process(url, out, floor_cpu / floor_tokens):
                print(f"{name:<18}{s:>7.2f}")


if __name__ == "__main__":
    main()
