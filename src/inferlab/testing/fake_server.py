"""A scripted OpenAI-compatible streaming server whose token timings are known exactly.

Token j of a request is written at t_recv + ttft + sum(gaps[:j]) on an
absolute schedule (no drift from cumulative sleeps). Every `slow_every`-th gap
is `slow_factor` x tpot, so the gap distribution has a known tail. The model
name picks a misbehaviour: early-stop, multi-token, error-mid-stream,
http-429, drop, malformed, split-utf8, over-max, endless (never ends), stall
(silent after 5 tokens). /tokenize counts one token per whitespace-separated
word, and usage.prompt_tokens agrees with it.

    python -m inferlab.testing.fake_server --port 0 --ttft 0.05 --tpot 0.02
    (prints "PORT <n>" once it listens)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from inferlab.bench.workload import prompt_sha1
from inferlab.engines.lifetime import die_with_parent
from inferlab.testing import fake_slo

SCENARIOS = (
    "fake",
    "early-stop",
    "multi-token",
    "error-mid-stream",
    "http-429",
    "drop",
    "malformed",
    "split-utf8",
    "over-max",
    "endless",
    "stall",
)
# "endless" keeps streaming past max_tokens with no finish_reason and no [DONE]; it stops
# only when the client hangs up (or after this many tokens, so no test can hang on it).
ENDLESS_CAP_TOKENS = 100_000
STALL_S = 30.0  # "stall" sends 5 tokens, then nothing for this long, then hangs up


@dataclass(frozen=True, slots=True)
class Script:
    ttft_s: float = 0.05
    tpot_s: float = 0.02
    slow_every: int = 10  # every n-th gap is slow (0: never)
    slow_factor: float = 3.0

    def gap_s(self, j: int) -> float:
        """Gap before token j (j >= 1)."""
        if self.slow_every and j % self.slow_every == 0:
            return self.tpot_s * self.slow_factor
        return self.tpot_s

    def token_offsets_s(self, n: int) -> list[float]:
        """When each of n tokens is due, from the request's arrival."""
        t, out = self.ttft_s, []
        for j in range(n):
            if j:
                t += self.gap_s(j)
            out.append(t)
        return out


def _chunk(
    model: str, api: str, text: str | None, finish: str | None, usage: dict[str, int] | None
) -> bytes:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if api == "chat":
        choice["delta"] = {"content": text} if text is not None else {}
    else:
        choice["text"] = text or ""
    obj: dict[str, Any] = {"id": "fake", "object": "chunk", "model": model, "choices": [choice]}
    if usage is not None:
        obj["usage"] = usage
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode()


def make_app(script: Script, metrics: str = "none") -> web.Application:
    async def models(_: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"id": m, "object": "model", "owned_by": "fake"}
                    for m in (*SCENARIOS, *fake_slo.MODELS)
                ],
            }
        )

    async def tokenize(request: web.Request) -> web.Response:
        body = await request.json()
        text = body.get("content") or body.get("prompt") or ""
        return web.json_response({"tokens": list(range(len(text.split())))})

    # prompt sha1 -> {"recv_ns", "write_ns": [...]}: when each token really left, on
    # CLOCK_MONOTONIC, which the client's perf_counter_ns shares (same machine).
    log: dict[str, dict[str, Any]] = {}

    async def debug_log(_: web.Request) -> web.Response:
        return web.json_response(log)

    async def completions(request: web.Request) -> web.StreamResponse:
        recv_ns = time.perf_counter_ns()
        t_recv = recv_ns / 1e9
        body = await request.json()
        api = "chat" if request.path.endswith("chat/completions") else "completions"
        model = body.get("model", "fake")
        if fake_slo.handles(model):  # crowded-K, slo-mix, reasoning (fake_slo.py)
            return await fake_slo.respond(request, body, api, script, log)
        if model not in SCENARIOS:
            return web.json_response({"error": {"message": f"no model {model}"}}, status=404)
        if model == "http-429":
            return web.json_response({"error": {"message": "rate limited"}}, status=429)
        prompt = body.get("prompt") if api == "completions" else body["messages"][-1]["content"]
        prompt_tokens = len(str(prompt).split())
        writes: list[int] = []
        log[prompt_sha1(str(prompt))] = {"recv_ns": recv_ns, "write_ns": writes}
        n = int(body.get("max_tokens", 16))
        if model == "early-stop":
            n = max(2, n // 2)
        per_event = 2 if model == "multi-token" else 1
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if model == "endless":
            return await _endless(resp, script, model, api, t_recv)
        offsets = script.token_offsets_s(n)
        sent = 0
        for j in range(0, n, per_event):
            due = t_recv + offsets[min(j + per_event - 1, n - 1)]
            delay = due - time.perf_counter_ns() / 1e9
            # sleep(0) when due already: "as fast as possible" still interleaves streams
            await asyncio.sleep(max(delay, 0.0))
            k = min(per_event, n - j)
            sent += k
            if model == "error-mid-stream" and j == 5:
                await resp.write(b'data: {"error": {"message": "CUDA out of memory"}}\n\n')
                return resp
            if model == "stall" and j == 5:  # silent, connection open, for a bounded while
                await asyncio.sleep(STALL_S)
                return resp
            if model == "drop" and j == 5:
                assert request.transport is not None
                request.transport.close()
                return resp
            text = "é日" if model == "split-utf8" else " tok" * k
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": sent}
            data = _chunk(model, api, text, None, usage if per_event > 1 else None)
            writes.append(time.perf_counter_ns())
            if model == "split-utf8":  # cut inside the 2-byte é: the client must reassemble
                cut = data.index("é".encode()) + 1
                await resp.write(data[:cut])
                await resp.drain()
                await resp.write(data[cut:])
            else:
                await resp.write(data)
            if model == "malformed" and j == 3:
                await resp.write(b"data: {not json\n\nthis line has no colon\n\n")
        finish = "stop" if model == "early-stop" else "length"
        completion = sent + prompt_tokens if model == "over-max" else sent
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
        }
        await resp.write(_chunk(model, api, None, finish, None))
        await resp.write(
            _chunk(model, api, None, None, usage).replace(b'"choices": [{', b'"x": [{')
        )
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    if metrics != "none":  # /metrics in an engine's dialect (fake_metrics.py); else 404
        from inferlab.testing import fake_metrics

        engine = fake_metrics.FakeEngine(metrics, script.tpot_s)
        completions = fake_metrics.metered(engine, completions, log)

    app = web.Application()
    if metrics != "none":
        app.router.add_get("/metrics", lambda _: fake_metrics.metrics_response(engine))
    app.router.add_get("/v1/models", models)
    app.router.add_post("/tokenize", tokenize)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/health", lambda _: _ok())
    app.router.add_get("/debug/log", debug_log)
    return app


async def _endless(
    resp: web.StreamResponse, script: Script, model: str, api: str, t_recv: float
) -> web.StreamResponse:
    """Tokens on the script's schedule, past any max_tokens, never a finish or [DONE]."""
    with contextlib.suppress(ConnectionError):
        for j in range(ENDLESS_CAP_TOKENS):
            due = t_recv + script.ttft_s + j * script.tpot_s
            await asyncio.sleep(max(due - time.perf_counter_ns() / 1e9, 0.0))
            await resp.write(_chunk(model, api, " tok", None, None))
    return resp


async def _ok() -> web.Response:
    return web.json_response({"status": "ok"})


async def serve(script: Script, port: int, metrics: str = "none") -> None:
    runner = web.AppRunner(make_app(script, metrics), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    port = runner.addresses[0][1]
    print(f"PORT {port}", flush=True)
    await asyncio.Event().wait()


@contextlib.contextmanager
def running_fake_server(
    ttft: float = 0.05, tpot: float = 0.02, slow_every: int = 10, metrics: str = "none"
) -> Iterator[str]:
    """Start the fake server in its own process on a free port; yield its /v1 base URL."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inferlab.testing.fake_server",
            "--port",
            "0",
            "--ttft",
            str(ttft),
            "--tpot",
            str(tpot),
            "--slow-every",
            str(slow_every),
            "--metrics",
            metrics,
        ],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent(),  # a killed test run leaves no server behind
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"fake server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft", type=float, default=0.05)
    p.add_argument("--tpot", type=float, default=0.02)
    p.add_argument("--slow-every", type=int, default=10)
    p.add_argument("--slow-factor", type=float, default=3.0)
    p.add_argument(
        "--metrics",
        choices=["none", "llamacpp", "vllm"],
        default="none",
        help="publish /metrics in this engine's dialect, its counters advanced by a step "
        "clock at --tpot (none: /metrics is a 404)",
    )
    a = p.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        script = Script(a.ttft, a.tpot, a.slow_every, a.slow_factor)
        asyncio.run(serve(script, a.port, a.metrics))


if __name__ == "__main__":
    main()
