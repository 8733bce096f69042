"""A tiny chat server in a thread: it streams numbered replies and keeps every request body.

Enough of the OpenAI API for bench (models, /tokenize counting words, streamed chat and
completions), so a test can read exactly what a conversation sent at each turn.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from inferlab.engines.llama_server import free_port


@dataclass
class Captured:
    bodies: list[dict[str, Any]] = field(default_factory=list)


def _chunk(text: str | None, finish: str | None, usage: dict[str, int] | None) -> bytes:
    choice = {"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}
    obj: dict[str, Any] = {"choices": [choice]}
    if usage:
        obj["usage"] = usage
    return f"data: {json.dumps(obj)}\n\n".encode()


def make_app(
    seen: Captured, chat_status: int, max_model_len: int | None, template_tokens: int = 0
) -> web.Application:
    async def models(_: web.Request) -> web.Response:
        m: dict[str, Any] = {"id": "chat", "object": "model", "owned_by": "test"}
        if max_model_len is not None:
            m["max_model_len"] = max_model_len
        return web.json_response({"object": "list", "data": [m]})

    async def tokenize(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"count": len(str(body.get("content", "")).split())})

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if chat_status != 200:
            return web.json_response({"error": {"message": "no chat template"}}, status=chat_status)
        seen.bodies.append(body)
        n = int(body.get("max_tokens", 4))
        if not body.get("stream"):
            return web.json_response({"choices": [{"message": {"content": "x"}}]})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        k = len(seen.bodies)
        for j in range(n):
            await resp.write(_chunk(f" r{k}w{j}", None, None))
        # usage counts the message after the chat template, as a real server does
        prompt = len(str(body["messages"][-1]["content"]).split()) + template_tokens
        await resp.write(_chunk(None, "length", None))
        usage = {"prompt_tokens": prompt, "completion_tokens": n}
        await resp.write(_chunk(None, None, usage))
        await resp.write(b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/tokenize", tokenize)
    app.router.add_post("/v1/chat/completions", chat)
    return app


@contextmanager
def chat_server(
    chat_status: int = 200, max_model_len: int | None = None, template_tokens: int = 0
) -> Iterator[tuple[str, Captured]]:
    """Serve on a free loopback port in a thread; yield (base URL, what it received)."""
    seen, port = Captured(), free_port()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    runner = web.AppRunner(make_app(seen, chat_status, max_model_len, template_tokens))

    async def start() -> None:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop)
    assert ready.wait(10), "chat server did not start"
    try:
        yield f"http://127.0.0.1:{port}/v1", seen
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
