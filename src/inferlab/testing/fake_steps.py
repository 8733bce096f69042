"""A llama-server-like fake whose engine steps cost what a script says, for profile tests.

One step loop serves every stream, as llama-server's does: a step starts, takes the
requests that were waiting when it started (after each paid its per-request cost) into
free slots, and lasts

    base + per_decode x D + per_context_token x (decoders' contexts)
         + per_prompt_token x (new prompt tokens) + per_kilo_pair x sum n(k + n/2)/1000
         + per_ubatch x (ubatches - 1) + per_decode_past_knee x sum max(g - knee, 0)

the last over the ubatches that carry decoders, g decoders each (a decode batch's cost
that bends at `knee` decoders, each ubatch priced at its own size, as one CPU thread's).

then every decoder gets a token and every admitted prompt its first. The ubatches are
llama.cpp's cut of the step by slot ids (specs/llamacpp_ubatches.py); a request takes the slot its
`id_slot` names (waiting while it is busy), else the idle slot released longest ago
(the highest of equals), as llama-server's get_available_slot without a cached prompt.
A request arriving mid-step joins the next one. A request waits request_overhead +
request_per_prompt_token x its prompt tokens (its per-request cost) before it can join a
step. A decoder's context is its prompt plus the tokens it has.
Prompts sent with cache_prompt reuse the longest common word prefix with an earlier
cached prompt (one token per word; `timings.cache_n` says how many); `timings.prompt_ms`
is the step that computed a request's prompt, as llama-server's.
GET /slots says each slot's last task (`id_task`, tasks numbered as they arrive), as
llama-server's does. `--die-after N`: the process exits (as a crash) when request N+1 arrives.
`--slower-after N --slower-by F`: from the arrival of request N+1 on, every step lasts
(1 + F) times its script (a machine that slowed down mid-run, at a point the test sets).

    python -m inferlab.testing.fake_steps --port 0 --base 0.02 ...   (prints "PORT <n>")
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from aiohttp import web

from inferlab.specs.llamacpp_ubatches import DEFAULT_N_UBATCH, split_ubatches
from inferlab.testing.fake_server import serving, tokenize

MODEL = "/models/fake-steps.gguf"


@dataclass(frozen=True, slots=True)
class StepScript:
    base_s: float = 0.02
    per_decode_s: float = 0.004
    per_context_token_s: float = 20e-6
    per_prompt_token_s: float = 50e-6
    per_kilo_pair_s: float = 0.1e-3
    per_ubatch_s: float = 0.006
    decode_knee: int = 0  # 0: decode linear in D
    per_decode_past_knee_s: float = 0.0
    request_overhead_s: float = 0.015
    request_per_prompt_token_s: float = 20e-6
    slots: int = 4
    ctx_per_slot: int = 1024
    threads: int = 1
    die_after: int = 0  # 0: never
    slower_after: int = 0  # requests; from the next one on, every step costs 1 + slower_by x
    slower_by: float = 0.0

    def step_s(
        self,
        decode_ctx: list[int],
        chunks: list[tuple[int, int]],
        ubatches: int = 1,
        groups: tuple[int, ...] | None = None,  # decoders per ubatch; None: all in one
    ) -> float:
        pairs = sum(n * (k + n / 2) for n, k in chunks)
        past = 0
        if self.decode_knee:
            past = sum(max(g - self.decode_knee, 0) for g in (groups or (len(decode_ctx),)))
        return (
            self.per_ubatch_s * max(ubatches - 1, 0)
            + self.per_decode_past_knee_s * past
            + self.base_s
            + self.per_decode_s * len(decode_ctx)
            + self.per_context_token_s * sum(decode_ctx)
            + self.per_prompt_token_s * sum(n for n, _ in chunks)
            + self.per_kilo_pair_s * pairs / 1000
        )


class Hangs(Protocol):
    gone: bool  # the client hung up: the engine drops the request at its next step


@contextlib.contextmanager
def dropped_on_hangup(req: Hangs) -> Iterator[None]:
    """While a reply streams: a client that hangs up (or a cancelled handler) marks the
    request gone, for the engine to drop at its next step; a cancel still propagates."""
    try:
        yield
    except ConnectionResetError:
        req.gone = True
    except asyncio.CancelledError:
        req.gone = True
        raise


@dataclass(eq=False, slots=True)
class _Req:
    words: list[str]
    max_tokens: int
    cached: int
    want_slot: int = -1  # id_slot; -1: any
    slot: int = -1
    out: asyncio.Queue[int | None] = field(default_factory=asyncio.Queue)
    made: int = 0
    gone: bool = False  # the client closed the stream
    prompt_s: float = 0.0  # the step that computed its prompt (timings.prompt_ms)
    task: int = -1  # the server's task id: one per request, in arrival order


class StepEngine:
    """The step loop: waiting -> (one step) -> running; tokens go to each request's queue."""

    def __init__(self, script: StepScript) -> None:
        self.s = script
        self.waiting: list[_Req] = []
        self.running: list[_Req] = []
        self.cache: list[list[str]] = []
        self.released = [-1.0] * script.slots  # when each slot was last released
        self.last_task = [-1] * script.slots  # /slots' id_task: the last task a slot took
        self.wake = asyncio.Event()
        self.speed = 1.0  # step time x this (1 + slower_by once slower_after requests came)
        self.due: float | None = None  # when the step running ends (None: idle)

    def _admit(self) -> list[_Req]:
        """The waiting requests that get a slot now (the rest keep waiting, in order)."""
        free = set(range(self.s.slots)) - {r.slot for r in self.running}
        admit, wait = [], []
        for r in self.waiting:
            if r.want_slot >= 0:
                ok = r.want_slot % self.s.slots in free
                r.slot = r.want_slot % self.s.slots
            elif free:
                ok, r.slot = True, min(free, key=lambda k: (self.released[k], -k))
            else:
                ok = False
            if ok:
                free.discard(r.slot)
                self.last_task[r.slot] = r.task
                admit.append(r)
            else:
                wait.append(r)
        self.waiting = wait
        return sorted(admit, key=lambda r: r.slot)

    def _ubatches(self, admit: list[_Req]) -> tuple[int, tuple[int, ...]]:
        """The step's ubatches and the decoders in each (specs/llamacpp_ubatches.py)."""
        seqs = [(r.slot, 1) for r in self.running] + [
            (r.slot, len(r.words) - r.cached) for r in admit
        ]
        return split_ubatches(seqs, DEFAULT_N_UBATCH, len(self.running))

    def cached_prefix(self, words: list[str]) -> int:
        best = 0
        for old in self.cache:
            n = 0
            for a, b in zip(old, words, strict=False):
                if a != b:
                    break
                n += 1
            best = max(best, n)
        return min(best, len(words) - 1)  # the last prompt token is always computed

    async def loop(self) -> None:
        while True:
            self.running = [r for r in self.running if not r.gone]
            if not self.waiting and not self.running:
                self.wake.clear()
                self.due = None
                await self.wake.wait()
                continue
            # A busy engine's step starts when the last one was due, not when this process
            # woke up: the test machine's scheduling delays do not add up step after step,
            # so a run of steps lasts what the script says (the tests' drift is scripted).
            t0 = time.perf_counter() if self.due is None else self.due
            admit = self._admit()
            ctx = [len(r.words) + r.made for r in self.running]
            chunks = [(len(r.words) - r.cached, r.cached) for r in admit]
            self.due = t0 + self.s.step_s(ctx, chunks, *self._ubatches(admit)) * self.speed
            await asyncio.sleep(max(self.due - time.perf_counter(), 0.0))
            for r in admit:
                r.prompt_s = time.perf_counter() - t0
            for r in [*self.running, *admit]:
                r.made += 1
                r.out.put_nowait(r.made)
            self.running = sorted([*self.running, *admit], key=lambda r: r.slot)
            for r in [r for r in self.running if r.made >= r.max_tokens]:
                r.out.put_nowait(None)
                self.running.remove(r)
                self.released[r.slot] = time.perf_counter()


def _event(text: str | None, final: dict[str, Any] | None = None) -> bytes:
    choice = {"index": 0, "text": text or "", "finish_reason": "length" if final else None}
    obj: dict[str, Any] = {"object": "text_completion", "model": MODEL, "choices": [choice]}
    if final:
        obj.update(final)
    return f"data: {json.dumps(obj)}\n\n".encode()


class App:
    def __init__(self, script: StepScript) -> None:
        self.s = script
        self.engine = StepEngine(script)
        self.requests = 0

    async def completions(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        if self.s.die_after and self.requests > self.s.die_after:
            os._exit(3)  # a crash: no answer, the connection drops
        if self.s.slower_after and self.requests > self.s.slower_after:
            self.engine.speed = 1.0 + self.s.slower_by
        body = await request.json()
        words = str(body.get("prompt", "")).split() or ["x"]
        cached = self.engine.cached_prefix(words) if body.get("cache_prompt") else 0
        if body.get("cache_prompt"):
            self.engine.cache.append(words)
        req = _Req(words, int(body.get("max_tokens", 16)), cached, int(body.get("id_slot", -1)))
        req.task = self.requests
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await asyncio.sleep(
            self.s.request_overhead_s + self.s.request_per_prompt_token_s * len(words)
        )
        self.engine.waiting.append(req)
        self.engine.wake.set()
        with dropped_on_hangup(req):
            while (n := await req.out.get()) is not None:
                await resp.write(_event(f" w{n}"))
            usage = {"prompt_tokens": len(words), "completion_tokens": req.made}
            timings = {
                "cache_n": cached,
                "prompt_n": len(words) - cached,
                "prompt_ms": req.prompt_s * 1e3,
            }
            await resp.write(_event(None, {"usage": usage, "timings": timings}))
            await resp.write(b"data: [DONE]\n\n")
        return resp

    async def slots(self, _: web.Request) -> web.Response:
        """llama-server's GET /slots, in the fields a test reads: each slot's last task."""
        busy = {r.slot for r in self.engine.running}
        return web.json_response(
            [
                {"id": k, "id_task": t, "is_processing": k in busy}
                for k, t in enumerate(self.engine.last_task)
            ]
        )

    async def props(self, _: web.Request) -> web.Response:
        return web.json_response(
            {
                "model_path": MODEL,
                "total_slots": self.s.slots,
                "default_generation_settings": {"n_ctx": self.s.ctx_per_slot},
                "build_info": "fake-steps",
            }
        )


async def _models(_: web.Request) -> web.Response:
    data = [{"id": MODEL, "object": "model", "owned_by": "llamacpp"}]
    return web.json_response({"object": "list", "data": data})


async def serve(script: StepScript, port: int) -> None:
    app = App(script)
    web_app = web.Application()
    web_app.router.add_get("/v1/models", _models)
    web_app.router.add_get("/props", app.props)
    web_app.router.add_get("/slots", app.slots)
    web_app.router.add_post("/tokenize", tokenize)
    web_app.router.add_post("/v1/completions", app.completions)
    await listen(web_app, port)
    await app.engine.loop()


async def listen(web_app: web.Application, port: int) -> None:
    """Serve `web_app` on 127.0.0.1:`port` (0: a free one) and print the port for the
    launcher (running_fake_steps, the vLLM fake's) to read."""
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    print(f"PORT {runner.addresses[0][1]}", flush=True)


@contextlib.contextmanager
def running_fake_steps(script: StepScript) -> Iterator[str]:
    """Start the fake in its own process on a free port; yield its /v1 base URL."""
    flags = [a for f in fields(script) for a in (f"--{f.name}", str(getattr(script, f.name)))]
    with serving("inferlab.testing.fake_steps", flags) as url:
        yield url


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    for f in fields(StepScript):
        p.add_argument(f"--{f.name}", type=type(f.default), default=f.default)
    a = vars(p.parse_args())
    port = a.pop("port")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(StepScript(**a), port))


if __name__ == "__main__":
    main()
