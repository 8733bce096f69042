"""What the server can take of a workload, asked before the first level is sent.

- Its context: llama.cpp's /props (`default_generation_settings.n_ctx`, per slot) or
  vLLM's `max_model_len` in /v1/models. A request longer than it is refused up front,
  naming the request (or the trace row) and what would fit.
- A chat template, for conversations (`--turns`): one tiny chat request; a server
  that cannot apply a template answers it with an error, and the run stops there.
Bodies are read up to a bound: a server answering megabytes here is not one to trust.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aiohttp

from inferlab.bench.client import Endpoint, _Stream, over_max_limit
from inferlab.bench.server import ServerInfo
from inferlab.bench.sse import EventTooLong, SSEParser
from inferlab.errors import InferlabError
from inferlab.httpbody import (
    query_deadline_s,
)
from inferlab.records import RequestRecord


def context_tokens(
    info: ServerInfo, model: str, props: dict[str, Any] | None
) -> tuple[int, str] | None:
    """(tokens, where the figure came from), or None when the server does not say: vLLM's
    max_model_len in /v1/models, else llama-server's n_ctx per slot in its /props."""
    for m in info.models_answer.get("data", []) or []:
        if isinstance(m, dict) and m.get("id") == model and isinstance(m.get("max_model_len"), int):
            return int(m["max_model_len"]), "the server's max_model_len"
    settings = (props or {}).get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return (int(n_ctx), "the server's n_ctx per slot") if isinstance(n_ctx, int) else None


async def check_chat(session: aiohttp.ClientSession, endpoint: Endpoint) -> None:
    """--turns speaks the chat API: refuse a server that cannot apply a chat template."""
    url = f"{endpoint.base_url.rstrip('/')}/chat/completions"
    body = {
        "model": endpoint.model,
        "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 1,
    }
    try:
        timeout = aiohttp.ClientTimeout(total=query_deadline_s(endpoint.request_timeout_s))
        async with session.post(url, json=body, headers=endpoint.headers(), timeout=timeout) as r:
            status = r.status
            text = (await r.content.read(4096)).decode("utf-8", "replace")
    except (TimeoutError, aiohttp.ClientError, OSError) as e:
        raise InferlabError(f"--turns: POST {url} failed ({type(e).__name__}: {e})") from e
    if status != 200:
        raise InferlabError(
            f"--turns needs the chat API with a chat template: POST {url} answered HTTP "
            f"{status} {text[:160].strip()!r}; serve the model with a chat template "
            "(llama-server --jinja, vLLM --chat-template) or drop --turns"
        )


FIRST_STREAM_BYTES = 64 << 10  # read of the first answer, at most (2 tokens: a few hundred)
PROBE_TEXT = "hello"
PROBE_TOKENS = 2  # the check's output: a server's counters include these, no record does
WRONG_ADDRESS = (404, 405)  # nothing there, or not something that takes a POST


@dataclass(frozen=True, slots=True)
class FirstStream:
    """What the first request's answer showed: an OpenAI stream or not, and its usage."""

    openai: bool
    prompt_tokens: int | None  # usage.prompt_tokens, when the server sent it


def read_first_stream(data: bytes) -> FirstStream:
    """The data lines of a (possibly cut) SSE answer: any `choices`, the last usage."""
    openai, prompt = False, None
    for line in data.split(b"\n"):
        text = line.strip()
        if not text.startswith(b"data:") or text[5:].strip() == b"[DONE]":
            continue
        try:
            event = json.loads(text[5:].strip())
        except ValueError:
            continue  # a cut last line, or a malformed one: the others decide
        if not isinstance(event, dict):
            continue
        openai = openai or isinstance(event.get("choices"), list)
        usage = event.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            prompt = int(usage["prompt_tokens"])
    return FirstStream(openai, prompt)


def _wrong_address(endpoint: Endpoint, what: str) -> InferlabError:
    base = endpoint.base_url.rstrip("/")
    hint = (
        f"point --url at the OpenAI base, e.g. {base}/v1"
        if not base.endswith("/v1")
        else "is --url the server's OpenAI base?"
    )
    return InferlabError(f"POST {endpoint.url} {what}: not an OpenAI stream; {hint}")


async def _read_answer(r: aiohttp.ClientResponse, into: bytearray, endpoint: Endpoint) -> None:
    """The answer to its end (2 tokens: a few hundred bytes), or its first 64 KiB; what came
    stays in `into` even if the deadline cuts the read. A stream past its forced length is
    cut as every request's is (client.over_max_limit, AFTER_FINISH_EVENTS): the check has
    seen what it needs, and the run's requests then record the cut."""
    probe = RequestRecord(0, "first", "warmup", len(PROBE_TEXT), PROBE_TOKENS)
    stream, parser = _Stream(probe), SSEParser(endpoint.max_event_bytes)
    limit = over_max_limit(PROBE_TOKENS)
    while len(into) < FIRST_STREAM_BYTES and not stream.done:
        chunk = await r.content.read(4096)
        if not chunk:
            break
        into += chunk
        try:
            events = parser.feed(chunk)
        except EventTooLong:
            return  # read_first_stream judges the bytes that came
        for data in events:
            stream.handle(data, 0)
        if stream.past_forced_length(limit):
            return


def _failed(endpoint: Endpoint, e: BaseException) -> InferlabError:
    return InferlabError(
        f"the first request to {endpoint.url} failed ({type(e).__name__}: {e}); "
        "is the server up, and --url its OpenAI base (.../v1)?"
    )


async def check_stream(session: aiohttp.ClientSession, endpoint: Endpoint) -> FirstStream:
    """One tiny streamed request before the run: an address that answers 404, an error,
    or a stream that is not OpenAI's (llama-server's own /completions at its root) is
    refused here, instead of a run whose every request fails."""
    timeout = aiohttp.ClientTimeout(
        total=min(endpoint.request_timeout_s, 120.0), sock_read=endpoint.read_timeout_s
    )
    got, status = bytearray(), 0
    try:
        async with session.post(
            endpoint.url,
            json=endpoint.body(PROBE_TEXT, PROBE_TOKENS),
            # its own connection, closed after: a server may close a socket after a stream
            # (llama-server does), and a next request (/tokenize) would find it dead
            headers=endpoint.headers() | {"Connection": "close"},
            timeout=timeout,
        ) as r:
            status = r.status
            await _read_answer(r, got, endpoint)
    except TimeoutError as e:  # a stream still running at the request deadline: as the run
        if not (status == 200 and read_first_stream(bytes(got)).openai):  # would cut it
            raise _failed(endpoint, e) from e
    except (aiohttp.ClientError, OSError) as e:
        raise _failed(endpoint, e) from e
    seen = bytes(got)
    text = seen[:160].decode("utf-8", "replace").strip()
    if status in (401, 403):
        raise InferlabError(f"POST {endpoint.url} refused the API key (HTTP {status}) {text!r}")
    if status in WRONG_ADDRESS:
        raise _wrong_address(endpoint, f"answered HTTP {status} {text!r}")
    if status != 200:  # a server busy or limiting now: its requests fail and say so
        return FirstStream(True, None)
    first = read_first_stream(seen)
    if not first.openai:
        raise _wrong_address(endpoint, f"answered {text!r}")
    return first
