"""One request to the fake server: its script, its paced token schedule, its write log.

A scenario (fake_scenarios.py) drives a `Stream`: `open()` logs the request and starts
the SSE response, `paced(n)` sleeps until each token is due on the script's absolute
schedule, `token()`/`send()` write a chunk and log when it really left, `finish()`
writes the finish chunk, the usage chunk and [DONE].
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from inferlab.bench.prompt_text import prompt_sha1

Api = Literal["chat", "completions"]
# prompt sha1 -> {"recv_ns": int, "write_ns": [int, ...]}: when each token really left, on
# CLOCK_MONOTONIC, which the client's perf_counter_ns shares (same machine). Served as
# JSON on /debug/log, so it stays a plain dict.
WriteLog = dict[str, dict[str, Any]]


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


def chunk(
    model: str, api: Api, text: str | None, finish: str | None, usage: dict[str, int] | None
) -> bytes:
    """One SSE event in the API's shape (chat: a delta; completions: text)."""
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if api == "chat":
        choice["delta"] = {"content": text} if text is not None else {}
    else:
        choice["text"] = text or ""
    obj: dict[str, Any] = {"id": "fake", "object": "chunk", "model": model, "choices": [choice]}
    if usage is not None:
        obj["usage"] = usage
    return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n".encode()


async def sleep_until(due_s: float) -> None:
    """Sleep until perf_counter reaches due_s; sleep(0) when already due, so that
    "as fast as possible" still interleaves streams."""
    await asyncio.sleep(max(due_s - time.perf_counter_ns() / 1e9, 0.0))


@dataclass(slots=True)
class Stream:
    request: web.Request
    body: dict[str, Any]
    script: Script
    log: WriteLog
    recv_ns: int
    writes: list[int] = field(default_factory=list)
    sent: int = 0  # tokens paced so far
    resp: web.StreamResponse = field(
        default_factory=lambda: web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    )

    @property
    def api(self) -> Api:
        return "chat" if self.request.path.endswith("chat/completions") else "completions"

    @property
    def model(self) -> str:
        return str(self.body.get("model", "fake"))

    @property
    def prompt(self) -> str:
        if self.api == "completions":
            return str(self.body.get("prompt"))
        return str(self.body["messages"][-1]["content"])

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt.split())

    @property
    def max_tokens(self) -> int:
        return int(self.body.get("max_tokens", 16))

    @property
    def t_recv_s(self) -> float:
        return self.recv_ns / 1e9

    async def open(self) -> None:
        """Log the request under its prompt's sha1 and start the event stream."""
        self.log[prompt_sha1(self.prompt)] = {"recv_ns": self.recv_ns, "write_ns": self.writes}
        await self.resp.prepare(self.request)

    async def paced(self, n: int, per_event: int = 1) -> AsyncIterator[tuple[int, int]]:
        """(first token index, tokens in this event), each when its last token is due."""
        offsets = self.script.token_offsets_s(n)
        for j in range(0, n, per_event):
            await sleep_until(self.t_recv_s + offsets[min(j + per_event - 1, n - 1)])
            k = min(per_event, n - j)
            self.sent += k
            yield j, k

    def chunk(
        self, text: str | None, finish: str | None = None, usage: dict[str, int] | None = None
    ) -> bytes:
        return chunk(self.model, self.api, text, finish, usage)

    async def send(self, data: bytes) -> None:
        """Write one token event, logging when it left."""
        self.writes.append(time.perf_counter_ns())
        await self.resp.write(data)

    async def token(self, text: str) -> None:
        await self.send(self.chunk(text))

    async def finish(self, reason: str, completion_tokens: int | None = None) -> web.StreamResponse:
        """The finish chunk, a usage chunk (no choices), [DONE], end of stream."""
        completion = self.sent if completion_tokens is None else completion_tokens
        usage = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
        }
        await self.resp.write(self.chunk(None, reason))
        await self.resp.write(self.chunk(None, None, usage).replace(b'"choices": [{', b'"x": [{'))
        await self.resp.write(b"data: [DONE]\n\n")
        await self.resp.write_eof()
        return self.resp
