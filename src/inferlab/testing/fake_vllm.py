"""A vLLM-like fake whose engine steps cost what a script says, for profile tests: the vLLM
mode of fake_steps.py (the llama-server one), with vLLM's scheduler and vLLM's /metrics.

One step loop serves every stream, as vLLM V1's engine core does (v1/core/sched/
scheduler.py, simplified): each step spends a token budget (max_num_batched_tokens) on
the running requests first, in the order they came (a decoder one token, a prompt still
being computed as many of its tokens as the budget has left: chunked prefill), then
admits waiting requests in arrival order while fewer than max_num_seqs run and budget is
left. A request's prompt is first looked up in the prefix cache: whole blocks of
block_size tokens (one token a word), chained from the first and salted by the request's
`cache_salt`, at most its prompt less one token (vLLM always computes the last); a
prompt's full blocks are cached once it is computed. No slots, no ubatches, no KV limit
and no preemption (num_gpu_blocks is only stated). The step lasts fake_steps.StepScript's
cost of its decoders (their contexts) and prompt chunks (n tokens, k before each), then
every decoder gets a token, and every request whose prompt the step finished its first.
A request waits request_overhead + request_per_prompt_token x its prompt tokens before
the scheduler sees it. /metrics is vLLM 0.32's page with the fake's counts
(fake_vllm_metrics.py); /v1/models says `owned_by` (vllm unless the script says
otherwise), /version the script's version, /tokenize counts one token a word.

    python -m inferlab.testing.fake_vllm --port 0 --script '{"block_size": 16,
        "costs": {"base_s": 0.02}}'                                  (prints "PORT <n>")
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections import deque
from dataclasses import dataclass, field

from aiohttp import web

from inferlab.testing.fake_steps import StepScript, dropped_on_hangup, listen
from inferlab.testing.fake_vllm_metrics import PageLabels, VllmBooks, render

MODEL = "fake-vllm"


@dataclass(frozen=True, slots=True)
class VllmScript:
    costs: StepScript = StepScript()  # its step and request costs (its slots: unused)
    block_size: int = 128
    num_gpu_blocks: int = 364
    max_num_seqs: int = 128
    max_num_batched_tokens: int = 2048
    max_model_len: int = 1024
    version: str = "0.32.0"
    owned_by: str = "vllm"


@dataclass(eq=False, slots=True)
class _Req:
    words: list[str]
    max_tokens: int
    salt: str
    arrived_s: float
    out: asyncio.Queue[int | None] = field(default_factory=asyncio.Queue)
    computed: int = 0  # prompt tokens in the KV cache (found cached, or computed)
    cached: int = 0
    made: int = 0
    scheduled_s: float = 0.0
    first_s: float = 0.0
    gone: bool = False


class VllmEngine:
    """The step loop: waiting -> (steps within the budget) -> running; tokens to queues."""

    def __init__(self, script: VllmScript) -> None:
        self.s = script
        self.waiting: deque[_Req] = deque()
        self.running: list[_Req] = []
        self.blocks: set[int] = set()
        self.books = VllmBooks()
        self.wake = asyncio.Event()

    def _hashes(self, r: _Req) -> list[int]:
        """The chained hashes of the prompt's full blocks."""
        b, out, parent = self.s.block_size, [], hash(r.salt)
        for i in range(len(r.words) // b):
            parent = hash((parent, tuple(r.words[i * b : (i + 1) * b])))
            out.append(parent)
        return out

    def _hit(self, r: _Req) -> int:
        """Prompt tokens found in cached whole blocks (never the last prompt token)."""
        found = 0
        for h in self._hashes(r):
            if h not in self.blocks:
                break
            found += self.s.block_size
        most = (len(r.words) - 1) // self.s.block_size * self.s.block_size
        return min(found, most)

    def _schedule(self, now: float) -> tuple[list[tuple[_Req, int]], list[_Req]]:
        """This step's prompt chunks (request, tokens) and decoders, in vLLM's order."""
        budget = self.s.max_num_batched_tokens
        chunks: list[tuple[_Req, int]] = []
        decoders: list[_Req] = []
        for r in self.running:
            left = len(r.words) - r.computed
            if budget <= 0:
                break
            if left > 0:
                chunks.append((r, min(left, budget)))
                budget -= chunks[-1][1]
            else:
                decoders.append(r)
                budget -= 1
        while self.waiting and budget > 0 and len(self.running) < self.s.max_num_seqs:
            r = self.waiting.popleft()
            r.cached = r.computed = self._hit(r)
            self.books.count("prefix_cache_queries", len(r.words))
            self.books.count("prefix_cache_hits", r.cached)
            r.scheduled_s = now
            chunks.append((r, min(len(r.words) - r.computed, budget)))
            budget -= chunks[-1][1]
            self.running.append(r)
        return chunks, decoders

    def _emit(self, r: _Req) -> None:
        r.made += 1
        r.out.put_nowait(r.made)
        self.books.count("generation_tokens", 1)
        if r.made >= r.max_tokens:
            r.out.put_nowait(None)
            self.running.remove(r)
            self.books.observe("request_prefill_time_seconds", r.first_s - r.scheduled_s)
            self.books.observe("request_queue_time_seconds", r.scheduled_s - r.arrived_s)

    def _finish_step(self, chunks: list[tuple[_Req, int]], decoders: list[_Req]) -> None:
        """Every decoder's token, and the first of each prompt the step finished."""
        now, prompt, sampled = time.perf_counter(), 0, len(decoders)
        for r, n in chunks:
            r.computed += n
            if r.computed == len(r.words):
                r.first_s = now
                prompt += len(r.words) - r.cached
                self.books.count("prompt_tokens", len(r.words))
                self.blocks.update(self._hashes(r))
                sampled += 1
                self._emit(r)
        for r in decoders:
            self._emit(r)
        if sampled:
            self.books.observe("iteration_tokens_total", prompt + sampled)

    async def loop(self) -> None:
        while True:
            self.running = [r for r in self.running if not r.gone]
            self.books.running, self.books.waiting = len(self.running), len(self.waiting)
            if not self.waiting and not self.running:
                self.wake.clear()
                await self.wake.wait()
                continue
            t0 = time.perf_counter()
            chunks, decoders = self._schedule(t0)
            ctx = [len(r.words) + r.made for r in decoders]
            due = t0 + self.s.costs.step_s(ctx, [(n, r.computed) for r, n in chunks])
            await asyncio.sleep(max(due - time.perf_counter(), 0.0))
            self._finish_step(chunks, decoders)


def _event(n: int | None, prompt: int, made: int) -> bytes:
    """One streamed completion event as vLLM sends it with continuous_usage_stats."""
    choice = {
        "index": 0,
        "text": f" w{n}" if n is not None else "",
        "finish_reason": "length" if n is None else None,
    }
    usage = {"prompt_tokens": prompt, "total_tokens": prompt + made, "completion_tokens": made}
    obj = {"object": "text_completion", "model": MODEL, "choices": [choice], "usage": usage}
    return f"data: {json.dumps(obj)}\n\n".encode()


class App:
    def __init__(self, script: VllmScript) -> None:
        self.s = script
        self.engine = VllmEngine(script)
        self.page = PageLabels(MODEL, script.block_size, script.num_gpu_blocks)

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        words = str(body.get("prompt", "")).split() or ["x"]
        max_tokens = int(body.get("max_tokens", 16))
        if len(words) + max_tokens > self.s.max_model_len:
            msg = f"{len(words) + max_tokens} tokens > max_model_len {self.s.max_model_len}"
            return web.json_response({"error": {"message": msg}}, status=400)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        c = self.s.costs
        await asyncio.sleep(c.request_overhead_s + c.request_per_prompt_token_s * len(words))
        req = _Req(words, max_tokens, str(body.get("cache_salt", "")), time.perf_counter())
        self.engine.waiting.append(req)
        self.engine.wake.set()
        with dropped_on_hangup(req):
            while (n := await req.out.get()) is not None:
                await resp.write(_event(n, len(words), req.made))
            await resp.write(_event(None, len(words), req.made))
            await resp.write(b"data: [DONE]\n\n")
        return resp

    async def tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        n = len(str(body.get("prompt") or body.get("content") or "").split())
        return web.json_response(
            {"count": n, "max_model_len": self.s.max_model_len, "tokens": list(range(n))}
        )

    async def models(self, _: web.Request) -> web.Response:
        m = {
            "id": MODEL,
            "object": "model",
            "owned_by": self.s.owned_by,
            "root": f"/models/{MODEL}",
            "max_model_len": self.s.max_model_len,
        }
        return web.json_response({"object": "list", "data": [m]})

    async def metrics(self, _: web.Request) -> web.Response:
        body = render(self.engine.books, self.page)
        return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4"})

    async def version(self, _: web.Request) -> web.Response:
        return web.json_response({"version": self.s.version})


async def serve(script: VllmScript, port: int) -> None:
    app = App(script)
    web_app = web.Application()
    web_app.router.add_get("/v1/models", app.models)
    web_app.router.add_get("/version", app.version)
    web_app.router.add_get("/metrics", app.metrics)
    web_app.router.add_post("/tokenize", app.tokenize)
    web_app.router.add_post("/v1/completions", app.completions)
    await listen(web_app, port)
    await app.engine.loop()


def script_from(text: str) -> VllmScript:
    """The script from its JSON (`--script`): VllmScript's fields, `costs` StepScript's."""
    d = json.loads(text) if text else {}
    costs = StepScript(**d.pop("costs", {}))
    return VllmScript(costs, **d)


def main() -> None:
    """`--port N --script JSON` (no argparse: a fake's command line is its tests')."""
    args = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
    script = script_from(args.get("--script", ""))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(script, int(args.get("--port", "0"))))


if __name__ == "__main__":
    main()
