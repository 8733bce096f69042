"""A scripted OpenAI-compatible streaming server whose token timings are known exactly.

Token j of a request is written at t_recv + ttft + sum(gaps[:j]) on an
absolute schedule (no drift from cumulative sleeps). Every `slow_every`-th gap
is `slow_factor` x tpot, so the gap distribution has a known tail. The model
name picks a scenario (fake_scenarios.SCENARIOS, one handler each): early-stop,
multi-token, error-mid-stream, http-429, drop, malformed, split-utf8, over-max,
endless (never ends), stall (silent after 5 tokens). /tokenize counts one token
per whitespace-separated word, and usage.prompt_tokens agrees with it.
/debug/log is the write log: when each token really left (fake_stream.py).

    python -m inferlab.testing.fake_server --port 0 --ttft 0.05 --tpot 0.02
    (prints "PORT <n>" once it listens)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator

from aiohttp import web

from inferlab.engines.lifetime import die_with_parent
from inferlab.testing.fake_metrics import METRICS_DIALECTS
from inferlab.testing.fake_scenarios import ENDLESS_CAP_TOKENS, SCENARIOS, STALL_S
from inferlab.testing.fake_stream import Script, Stream, WriteLog

__all__ = [
    "ENDLESS_CAP_TOKENS",
    "SCENARIOS",
    "STALL_S",
    "Script",
    "make_app",
    "running_fake_server",
    "serve",
]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _models(_: web.Request) -> web.Response:
    data = [{"id": m, "object": "model", "owned_by": "fake"} for m in SCENARIOS]
    return web.json_response({"object": "list", "data": data})


async def tokenize(request: web.Request) -> web.Response:
    body = await request.json()
    text = body.get("content") or body.get("prompt") or ""
    return web.json_response({"tokens": list(range(len(text.split())))})


def _completions(script: Script, log: WriteLog) -> Handler:
    """The /v1/completions and /v1/chat/completions handler: the model picks the scenario."""

    async def completions(request: web.Request) -> web.StreamResponse:
        recv_ns = time.perf_counter_ns()
        body = await request.json()
        model = body.get("model", "fake")
        scenario = SCENARIOS.get(model)
        if scenario is None:
            return web.json_response({"error": {"message": f"no model {model}"}}, status=404)
        return await scenario(Stream(request, body, script, log, recv_ns))

    return completions


def make_app(script: Script, metrics: str = "none") -> web.Application:
    log: WriteLog = {}
    completions = _completions(script, log)
    app = web.Application()
    if metrics != "none":  # /metrics in an engine's dialect (fake_metrics.py); else 404
        from inferlab.testing import fake_metrics

        engine = fake_metrics.engine_for(metrics, script.tpot_s)
        completions = fake_metrics.metered(engine, completions, log)
        app.router.add_get("/metrics", lambda _: fake_metrics.metrics_response(engine))
    app.router.add_get("/v1/models", _models)
    app.router.add_post("/tokenize", tokenize)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/health", lambda _: _json({"status": "ok"}))
    app.router.add_get("/debug/log", lambda _: _json(log))
    return app


async def _json(obj: object) -> web.Response:
    return web.json_response(obj)


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
    timing = ["--ttft", str(ttft), "--tpot", str(tpot), "--slow-every", str(slow_every)]
    with serving("inferlab.testing.fake_server", [*timing, "--metrics", metrics]) as url:
        yield url


@contextlib.contextmanager
def serving(module: str, flags: list[str]) -> Iterator[str]:
    """Run a fake's module on a free port (it prints `PORT n`); yield its /v1 base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--port", "0", *flags],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent(),  # a killed test run leaves no server behind
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"{module} did not start: {line!r}")
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
        choices=METRICS_DIALECTS,
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
