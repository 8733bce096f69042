"""Load: closed-loop levels, or open-loop levels sent at their scheduled instants.

The requests and their instants come from load/ (drawn there, never here): a
closed loop hands the next prompt to the first free stream; an open loop sends
each prompt at `at_s` after the level's start, whatever the server is doing.

Records go to the writer as each request completes. Per level the runner also
measures the client itself (CPU time, event-loop lag), because on a small
machine the client and the server compete for the same cores.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from inferlab.bench.client import Endpoint, stream_request
from inferlab.bench.hoststat import CpuTicks
from inferlab.bench.lag import LagMonitor
from inferlab.bench.prompt_text import Prompt
from inferlab.load.spec import Level
from inferlab.records import RecordWriter, RequestRecord
from inferlab.summary import MachineReading


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
    implied_hit_ratio: float | None = None  # prefix-cache hits the level's specs imply
    repeat: int = 0  # bench --repeat: which run of this level (0: the first)
    host_ticks: CpuTicks | None = None  # the host's CPU time over the level (Linux)
    endpoint: str | None = None  # bench --url A --url B: whose block this is
    block: int | None = None  # and its place in the level's sequence of blocks
    machine_after: MachineReading | None = None  # paired runs: the machine canary after it


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
    """Run every prompt (those whose index is below `warmup` marked warm-up) into `run`.

    The caller owns `run`, so an interrupted level still holds what completed. A
    conversation's turns run one after another (see `_chain`); other prompts are one each.
    """
    level = run.level
    cpu0, wall0 = time.process_time(), time.perf_counter()
    send = _Sender(ctx, run, prompts, warmup, first_id, on_done, level.open_loop)
    chains = chains_of(prompts)
    with LagMonitor() as lag:
        try:
            if level.open_loop:
                await _open_loop(ctx, prompts, chains, send)
            else:
                await _closed_loop(ctx, int(level.value), chains, send)
        except asyncio.CancelledError:
            run.interrupted = True
            raise
        finally:
            run.wall_s = time.perf_counter() - wall0
            run.client_cpu_s = time.process_time() - cpu0
            run.loop_lag_s = list(lag.lags)
    return run


Message = dict[str, str]


class _Sender:
    """Sends one prompt and records it; a conversation's turn also returns its reply."""

    def __init__(
        self,
        ctx: LevelContext,
        run: LevelRun,
        prompts: list[Prompt],
        warmup: int,
        first_id: int,
        on_done: Callable[[RequestRecord], None],
        gate: bool,
    ) -> None:
        self.ctx, self.run, self.prompts, self.on_done = ctx, run, prompts, on_done
        self.warmup, self.first_id = warmup, first_id
        self.in_flight = 0
        # Open loop: wait for a free connection HERE, before send_ns is stamped: waiting
        # inside the pool would be counted as TTFT instead of queue delay.
        self.sem = asyncio.Semaphore(ctx.max_in_flight) if gate else None

    def record(self, p: Prompt, scheduled_ns: int) -> RequestRecord:
        ctx = self.ctx
        return RequestRecord(
            request_id=self.first_id + p.index,
            level=self.run.level.label,
            phase="warmup" if p.index < self.warmup else "measure",
            prompt_tokens_target=p.target_tokens or ctx.prompt_tokens,
            max_tokens=p.max_tokens or ctx.max_tokens,
            prompt_sha1=p.sha1,
            scheduled_ns=scheduled_ns,
            conversation_id=p.conversation_id,
            turn=p.turn,
            prefix_group=p.prefix_group,
            repeat=self.run.repeat,
            endpoint=self.run.endpoint,
            block=self.run.block,
        )

    async def __call__(self, i: int, scheduled_ns: int, history: list[Message]) -> str:
        if self.sem is None:
            return await self._send(i, scheduled_ns, history)
        async with self.sem:
            return await self._send(i, scheduled_ns, history)

    async def _send(self, i: int, scheduled_ns: int, history: list[Message]) -> str:
        ctx, p = self.ctx, self.prompts[i]
        rec = self.record(p, scheduled_ns)
        reply: list[str] | None = [] if p.conversation_id is not None else None
        self.in_flight += 1
        rec.in_flight_at_send = self.in_flight
        if ctx.on_start is not None:
            ctx.on_start(rec.request_id)
        try:
            await stream_request(ctx.session, ctx.endpoint, rec, p.text, ctx.t0_ns, history, reply)
        finally:
            self.in_flight -= 1
        ctx.writer.write(rec)
        self.run.records.append(rec)
        self.on_done(rec)
        return "".join(reply) if reply is not None else ""


def chains_of(prompts: list[Prompt]) -> list[list[int]]:
    """Prompt indices to run one after another: a conversation's turns, or one prompt."""
    chains: list[list[int]] = []
    last: int | None = None
    for i, p in enumerate(prompts):
        if p.conversation_id is not None and p.conversation_id == last and p.turn > 0:
            chains[-1].append(i)
        else:
            chains.append([i])
        last = p.conversation_id
    return chains


async def _chain(ctx: LevelContext, chain: list[int], first_ns: int, send: _Sender) -> None:
    """Turn k + 1 is sent its think time after turn k's reply ended, with the whole
    history: every earlier message and the replies exactly as the server streamed them."""
    history: list[Message] = []
    scheduled_ns = first_ns
    for k, i in enumerate(chain):
        p = send.prompts[i]
        if k:
            target = time.perf_counter_ns() + int(p.think_s * 1e9)
            if p.think_s > 0:
                await asyncio.sleep(p.think_s)
            scheduled_ns = target - ctx.t0_ns
        reply = await send(i, scheduled_ns, history)
        if len(chain) > 1:
            history += [
                {"role": "user", "content": p.text},
                {"role": "assistant", "content": reply},
            ]


async def _closed_loop(
    ctx: LevelContext, streams: int, chains: list[list[int]], send: _Sender
) -> None:
    """`streams` users, each sending its next request (or conversation) when the last ends."""
    queue = iter(chains)

    async def worker() -> None:
        for chain in queue:
            if len(chain) == 1:  # the common case, kept lean
                await send(chain[0], time.perf_counter_ns() - ctx.t0_ns, [])
            else:
                await _chain(ctx, chain, time.perf_counter_ns() - ctx.t0_ns, send)

    await asyncio.gather(*(worker() for _ in range(streams)))


async def _open_loop(
    ctx: LevelContext, prompts: list[Prompt], chains: list[list[int]], send: _Sender
) -> None:
    """Each prompt (a conversation's first turn) sent at its scheduled instant, `at_s`
    after the start, whatever the server is doing; records carry the instant, so
    lateness is measured, not hidden."""
    start = time.perf_counter_ns()
    tasks: list[asyncio.Task[Any]] = []
    for chain in chains:
        target = start + int((prompts[chain[0]].at_s or 0.0) * 1e9)
        await _until(target)
        sched = target - ctx.t0_ns
        if len(chain) == 1:
            tasks.append(asyncio.create_task(send(chain[0], sched, [])))
        else:
            tasks.append(asyncio.create_task(_chain(ctx, chain, sched, send)))
    await asyncio.gather(*tasks)


# Event-loop timers fire on a millisecond grid (epoll, libuv), so a sleep can end up to
# 1 ms late: wake this much early, then yield to the other streams until the instant.
WAKE_EARLY_NS = 1_500_000


async def _until(target_ns: int) -> None:
    """Return at `target_ns` (perf_counter_ns), not a timer tick after it."""
    delay_ns = target_ns - time.perf_counter_ns()
    if delay_ns > WAKE_EARLY_NS:
        await asyncio.sleep((delay_ns - WAKE_EARLY_NS) / 1e9)
    while time.perf_counter_ns() < target_ns:
        await asyncio.sleep(0)  # other streams still run while the instant comes


def event_loop_runner() -> Any:
    """asyncio.run, on uvloop where it is installed (less per-event overhead)."""
    try:
        import uvloop

        return uvloop.run
    except ImportError:
        return asyncio.run
