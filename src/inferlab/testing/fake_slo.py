"""Fake-server models for SLO work, each with an answer the tests know:

- `crowded-K` (K in 1, 2, 3, 5, 8, 12): every token gap is the script's TPOT while at
  most K streams are open, and grows by one TPOT for each stream beyond K (latency grows
  with the number of open streams), so the highest concurrency within
  `tpot_p50 < 1.5 x TPOT` is exactly K;
- `slo-mix`: request n (in arrival order) waits 300 ms more before its first token when
  n % 4 == 3, and fails with HTTP 500 when n % 10 == 9; /debug/log says which, per prompt;
- `reasoning`: the first half of the tokens stream as `reasoning_content` (chat), then
  the answer as `content`; the log keeps when the first answer token left.

They plug into fake_server.make_app through `handles(model)` / `respond(...)`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web

from inferlab.bench.workload import prompt_sha1

MODELS = ("slo-mix", "reasoning", *(f"crowded-{k}" for k in (1, 2, 3, 5, 8, 12)))
SLOW_FIRST_TOKEN_S = 0.3  # slo-mix: the extra wait of every 4th request
_CROWDED = re.compile(r"crowded-(\d+)")


class _Script(Protocol):
    @property
    def ttft_s(self) -> float: ...
    @property
    def tpot_s(self) -> float: ...


@dataclass(slots=True)
class _State:
    open_streams: int = 0
    arrivals: int = 0  # slo-mix requests so far
    extra: dict[str, Any] = field(default_factory=dict)


_STATE = _State()  # one fake server per process


def handles(model: str) -> bool:
    return model in MODELS


def _chunk(model: str, api: str, text: str, reasoning: bool) -> bytes:
    choice: dict[str, Any] = {"index": 0, "finish_reason": None}
    if api == "chat":
        choice["delta"] = {"reasoning_content" if reasoning else "content": text}
    else:
        choice["text"] = "" if reasoning else text
    obj = {"id": "fake", "object": "chunk", "model": model, "choices": [choice]}
    return f"data: {json.dumps(obj)}\n\n".encode()


def _end(model: str, prompt_tokens: int, n: int) -> bytes:
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": n,
        "total_tokens": prompt_tokens + n,
    }
    done = {
        "id": "fake",
        "object": "chunk",
        "model": model,
        "choices": [{"index": 0, "finish_reason": "length", "text": ""}],
    }
    tail = {"id": "fake", "object": "chunk", "model": model, "choices": [], "usage": usage}
    return f"data: {json.dumps(done)}\n\ndata: {json.dumps(tail)}\n\ndata: [DONE]\n\n".encode()


def _gap_s(model: str, script: _Script) -> float:
    m = _CROWDED.fullmatch(model)
    if m is None:
        return script.tpot_s
    beyond = max(0, _STATE.open_streams - int(m.group(1)))
    return script.tpot_s * (1 + beyond)


async def respond(
    request: web.Request, body: dict[str, Any], api: str, script: _Script, log: dict[str, Any]
) -> web.StreamResponse:
    """One request of a model above; its facts go to the server's /debug/log."""
    t_recv = time.perf_counter()
    model = str(body.get("model"))
    prompt = body.get("prompt") if api == "completions" else body["messages"][-1]["content"]
    entry: dict[str, Any] = {"recv_ns": time.perf_counter_ns(), "write_ns": []}
    log[prompt_sha1(str(prompt))] = entry
    ttft = script.ttft_s
    if model == "slo-mix":
        n_arrival = _STATE.arrivals
        _STATE.arrivals += 1
        entry["slow"], entry["failed"] = n_arrival % 4 == 3, n_arrival % 10 == 9
        if entry["failed"]:
            return web.json_response({"error": {"message": "scripted failure"}}, status=500)
        ttft += SLOW_FIRST_TOKEN_S if entry["slow"] else 0.0
    n = int(body.get("max_tokens", 16))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    _STATE.open_streams += 1
    try:
        await _stream(resp, model, api, script, (t_recv + ttft, n), entry)
        await resp.write(_end(model, len(str(prompt).split()), n))
        await resp.write_eof()
    finally:
        _STATE.open_streams -= 1
    return resp


async def _stream(
    resp: web.StreamResponse,
    model: str,
    api: str,
    script: _Script,
    first: tuple[float, int],
    entry: dict[str, Any],
) -> None:
    due, n = first
    thinking = n // 2 if model == "reasoning" else 0
    for j in range(n):
        if j:
            due += _gap_s(model, script)  # the gap as the streams open now make it
        await asyncio.sleep(max(due - time.perf_counter(), 0.0))
        reasoning = j < thinking
        if j == thinking:
            entry["first_answer_ns"] = time.perf_counter_ns()
        entry["write_ns"].append(time.perf_counter_ns())
        await resp.write(_chunk(model, api, " tok", reasoning))
    entry["reasoning_tokens"] = thinking
