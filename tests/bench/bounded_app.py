"""A tiny aiohttp server for the bounded-reading and auto-floor tests: normal streams, endless
lines and bodies, trickled answers, and llama.cpp's /props (`model_path`) when a test gives one.

`serve(app)` runs it on 127.0.0.1 in a thread with its own event loop, so both
async tests and the in-process CLI (which runs its own loop) can talk to it.
Every endless answer stops after ENDLESS_CAP bytes, so no test can hang on it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiohttp import web

ENDLESS_CAP = 64 << 20  # the most any endless answer writes before giving up
TRICKLE_GAP_S = 0.2  # a trickled answer: one space this often (a stuck proxy does this)
TRICKLE_CAP = 1500  # spaces, 5 min: no test can hang on it, and a client that waited
# on it to the end reads far more than a deadline of a few seconds lets through
BLOCK = b"x" * (64 << 10)


@dataclass(slots=True)
class Script:
    """What the app does; the tests set it and read what happened."""

    endless_request: int | None = None  # the n-th completion request (0-based) streams forever
    endless_paths: set[str] = field(default_factory=set)  # GET/POST paths answered endlessly
    trickle_paths: set[str] = field(default_factory=set)  # answered 200, then a byte at a time
    error_status: int | None = None  # completions answer this status with an endless body
    fail_from: int | None = None  # the n-th completion request (0-based) on answer HTTP 500
    root_paths: bool = False  # llama-server's own API at the root: /models, /completions
    props: dict[str, object] | None = None  # GET /props answers this (else 404 or endless)
    models: dict[str, object] | None = None  # GET /v1/models answers this (else one model "m")
    token_gap_s: float = 0.0  # between tokens: > 0 keeps them in separate reads (a real TPOT)
    completions: int = 0
    endless_bytes_sent: list[int] = field(default_factory=list)
    trickled: dict[str, list[int]] = field(default_factory=dict)  # path: spaces sent, per ask
    bodies: list[dict[str, object]] = field(default_factory=list)  # every completion body
    headers: list[dict[str, str]] = field(default_factory=list)  # and its headers


SCRIPT = web.AppKey("script", Script)


async def _endless(request: web.Request, head: bytes, status: int = 200) -> web.StreamResponse:
    resp = web.StreamResponse(status=status)
    resp.content_type = "text/event-stream" if head.startswith(b"data:") else "text/plain"
    await resp.prepare(request)
    sent = 0
    try:
        await resp.write(head)
        while sent < ENDLESS_CAP:  # bounded: a client that never stops still ends here
            await resp.write(BLOCK)
            sent += len(BLOCK)
    except (ConnectionResetError, ConnectionError, RuntimeError):
        pass  # the client hung up: what these tests want
    request.app[SCRIPT].endless_bytes_sent.append(sent)
    return resp


async def _trickle(request: web.Request, head: bytes) -> web.StreamResponse:
    """HTTP 200 and the start of an answer, then one space every TRICKLE_GAP_S, until the
    client hangs up (or TRICKLE_CAP): every read is short, the answer never ends."""
    resp = web.StreamResponse()
    resp.content_type = "application/json" if head.startswith(b"{") else "text/plain"
    await resp.prepare(request)
    sent = 0
    try:
        await resp.write(head)
        while sent < TRICKLE_CAP:
            await asyncio.sleep(TRICKLE_GAP_S)
            await resp.write(b" ")
            sent += 1
    except (ConnectionResetError, ConnectionError, RuntimeError):
        pass  # the client hung up at its deadline: what these tests want
    request.app[SCRIPT].trickled.setdefault(request.path, []).append(sent)
    return resp


TRICKLE_HEADS = {"/v1/models": b'{"object": "list", "data": [', "/metrics": b"# HELP x\n"}


async def trickled_or(request: web.Request) -> web.StreamResponse | None:
    """The trickled answer where the script trickles this path, else None."""
    if request.path not in request.app[SCRIPT].trickle_paths:
        return None
    return await _trickle(request, TRICKLE_HEADS.get(request.path, b'{"a": '))


def _event(text: str, finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    obj: dict[str, object] = {"choices": [{"text": text, "index": 0, "finish_reason": finish}]}
    if usage:
        obj["usage"] = usage
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


async def completions(request: web.Request) -> web.StreamResponse:
    script: Script = request.app[SCRIPT]
    body = await request.json()
    script.bodies.append(body)
    script.headers.append(dict(request.headers))
    n = script.completions
    script.completions += 1
    if script.error_status is not None:
        return await _endless(request, b"error: ", script.error_status)
    if body.get("model") == "endless" or n == script.endless_request:
        return await _endless(request, b'data: {"choices":[{"text":"')
    if script.fail_from is not None and n >= script.fail_from:
        return web.json_response({"error": {"message": "scripted failure"}}, status=500)
    resp = web.StreamResponse()
    resp.content_type = "text/event-stream"
    await resp.prepare(request)
    max_tokens = int(body.get("max_tokens", 4))
    for i in range(max_tokens):
        last = i == max_tokens - 1
        await resp.write(_event(" tok", "length" if last else None))
        await asyncio.sleep(0 if last else script.token_gap_s)
    usage = {"prompt_tokens": 8, "completion_tokens": max_tokens}
    await resp.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")
    return resp


async def native_completion(request: web.Request) -> web.StreamResponse:
    """llama-server's own /completion(s) at the root: a stream of `content`, no `choices`."""
    resp = web.StreamResponse()
    resp.content_type = "text/event-stream"
    await resp.prepare(request)
    for last in (False, True):
        await resp.write(
            b"data: " + json.dumps({"content": " tok", "stop": last}).encode() + b"\n\n"
        )
    return resp


async def models(request: web.Request) -> web.StreamResponse:
    if (trickled := await trickled_or(request)) is not None:
        return trickled
    if "/v1/models" in request.app[SCRIPT].endless_paths:
        return await _endless(request, b'{"data":[{"id":"')
    said = request.app[SCRIPT].models
    return web.json_response(said or {"object": "list", "data": [{"id": "m", "owned_by": "test"}]})


async def endless_or_404(request: web.Request) -> web.StreamResponse:
    if (trickled := await trickled_or(request)) is not None:
        return trickled
    if request.path in request.app[SCRIPT].endless_paths:
        return await _endless(request, b"# endless\n")
    raise web.HTTPNotFound()


async def props(request: web.Request) -> web.StreamResponse:
    answer = request.app[SCRIPT].props
    if (trickled := await trickled_or(request)) is not None:
        return trickled
    if answer is not None:
        return web.json_response(answer)
    return await endless_or_404(request)


async def big_declared(request: web.Request) -> web.StreamResponse:
    """Declares a 1 GiB body, sends 1 byte and holds: only a client that checks
    Content-Length first can say "too large" (a reading one gets a payload error)."""
    resp = web.StreamResponse()
    resp.content_length = 1 << 30
    await resp.prepare(request)
    await resp.write(b"x")
    await asyncio.sleep(0.5)  # bounded; a reading client would then get a payload error
    return resp


def make_app(script: Script) -> web.Application:
    app = web.Application()
    app[SCRIPT] = script
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/tokenize", endless_or_404)
    app.router.add_get("/metrics", endless_or_404)
    app.router.add_get("/props", props)
    app.router.add_get("/slots", endless_or_404)
    app.router.add_get("/declared", big_declared)
    if script.root_paths:
        app.router.add_get("/models", models)
        app.router.add_post("/completions", native_completion)
    return app


@contextmanager
def serve(app: web.Application, port: int = 0) -> Iterator[str]:
    """Run `app` on 127.0.0.1:port (0: a free one) in a thread; yield http://127.0.0.1:PORT."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    started = threading.Event()

    def main() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(runner.setup())
        loop.run_until_complete(web.SockSite(runner, sock).start())
        started.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())
        loop.close()

    thread = threading.Thread(target=main, name="bounded-app", daemon=True)
    thread.start()
    assert started.wait(30), "the test server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
