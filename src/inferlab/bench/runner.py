"""Load: closed-loop concurrency levels or open-loop Poisson rates, warm-up excluded.

Records go to the writer as each request completes. Per level the runner also
measures the client itself (CPU time, event-loop lag), because on a small
machine the client and the server compete for the same cores.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from inferlab.bench.client import Endpoint, stream_request
from inferlab.bench.lag import LagMonitor
from inferlab.bench.workload import Prompt
from inferlab.records import RecordWriter, RequestRecord
from inferlab.vocab import LevelKind


@dataclass(frozen=True, slots=True)
class Level:
    kind: LevelKind
    value: float  # streams, or requests per second
    name: str = ""  # a worker's share keeps the whole level's label

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        return f"c={int(self.value)}" if self.kind == "concurrency" else f"rate={self.value:g}/s"


@dataclass(slots=True)
class LevelRun:
    level: Level
    records: list[RequestRecord] = field(default_factory=list)
    wall_s: float = 0.0
    client_cpu_s: float = 0.0
    loop_lag_s: list[float] = field(default_factory=list)
    interrupted: bool = False
    server_samples: list[Any] | None = None  # /metrics scrapes (servermetrics.sampler.Sample)
    workers: list[Any] = field(default_factory=list)  # drive.WorkerOutcome, when several ran it


@dataclass(frozen=True, slots=True)
class LevelContext:
    """What every level of a sweep shares: the session, the endpoint, the writer, the clock."""

    session: aiohttp.ClientSession
    endpoint: Endpoint
    writer: RecordWriter
    t0_ns: int
    max_tokens: int
    prompt_tokens: int
    seed: int = 0
    max_in_flight: int = 1024  # the connection pool's size: more would queue unseen
    root_url: str = ""
    on_start: Callable[[int], None] | None = None  # a request id was sent (workers report it)


async def run_level(
    ctx: LevelContext,
    run: LevelRun,
    prompts: list[Prompt],
    warmup: int,
    first_id: int,
    on_done: Callable[[RequestRecord], None] = lambda r: None,
) -> LevelRun:
    """Run len(prompts) requests, the first `warmup` of them marked warm-up, into `run`.

    The caller owns `run`, so an interrupted level still holds what completed.
    """
    level = run.level
    in_flight = 0
    cpu0, wall0 = time.process_time(), time.perf_counter()

    async def one(i: int, scheduled_ns: int) -> None:
        nonlocal in_flight
        rec = RequestRecord(
            request_id=first_id + i,
            level=level.label,
            phase="warmup" if i < warmup else "measure",
            prompt_tokens_target=ctx.prompt_tokens,
            max_tokens=ctx.max_tokens,
            prompt_sha1=prompts[i].sha1,
            scheduled_ns=scheduled_ns,
        )
        in_flight += 1
        rec.in_flight_at_send = in_flight
        if ctx.on_start is not None:
            ctx.on_start(rec.request_id)
        try:
            await stream_request(ctx.session, ctx.endpoint, rec, prompts[i].text, ctx.t0_ns)
        finally:
            in_flight -= 1
        ctx.writer.write(rec)
        run.records.append(rec)
        on_done(rec)

    with LagMonitor() as lag:
        try:
            if level.kind == "concurrency":
                await _closed_loop(ctx, int(level.value), len(prompts), one)
            else:
                await _open_loop(ctx, level.value, len(prompts), first_id, one)
        except asyncio.CancelledError:
            run.interrupted = True
            raise
        finally:
            run.wall_s = time.perf_counter() - wall0
            run.client_cpu_s = time.process_time() - cpu0
            run.loop_lag_s = list(lag.lags)
    return run


_Send = Callable[[int, int], Awaitable[None]]


async def _closed_loop(ctx: LevelContext, streams: int, n: int, one: _Send) -> None:
    """`streams` users, each sending its next request when the last one ends."""
    queue = iter(range(n))

    async def worker() -> None:
        for i in queue:
            await one(i, time.perf_counter_ns() - ctx.t0_ns)

    await asyncio.gather(*(worker() for _ in range(streams)))


async def _open_loop(ctx: LevelContext, rate: float, n: int, first_id: int, one: _Send) -> None:
    """Poisson arrivals at `rate` per second, whatever the server is doing."""
    rng = random.Random(ctx.seed + first_id)
    sem = asyncio.Semaphore(ctx.max_in_flight)
    start = time.perf_counter_ns()
    t_next = 0.0
    tasks = []

    async def gated(i: int, sched: int) -> None:
        # Wait for a free connection HERE, before send_ns is stamped: waiting
        # inside the pool would be counted as TTFT instead of queue delay.
        async with sem:
            await one(i, sched)

    for i in range(n):
        target = start + int(t_next * 1e9)
        delay = (target - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(gated(i, target - ctx.t0_ns)))
        t_next += rng.expovariate(rate)
    await asyncio.gather(*tasks)


def event_loop_runner() -> Any:
    """asyncio.run, on uvloop where it is installed (less per-event overhead)."""
    try:
        import uvloop

        return uvloop.run
    except ImportError:
        return asyncio.run
