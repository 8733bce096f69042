"""What bench asks a server before its first level, each answer within a deadline.

Every request: the request lengths against the server's context (where it states
it), the chat API for --turns, one request that must answer with an OpenAI stream,
the chat template's tokens (--api chat), /tokenize, and llama-server's slots
(/props). A side endpoint that does not finish its answer by its deadline (a stuck
proxy trickles a byte at a time) is done without, and a warning names it: the run
goes on with its lengths checked only against usage, or its slots unsettled. Only
the stream check is a refusal (bench cannot measure without it).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from inferlab.bench.autofloor import fetch_props, props_url
from inferlab.bench.client import Endpoint
from inferlab.bench.prompt_text import LocalCounter, server_count
from inferlab.bench.server import ServerInfo
from inferlab.bench.settle import slot_count
from inferlab.errors import InferlabError
from inferlab.httpbody import AnswerTooSlow, query_deadline_s
from inferlab.load.spec import Requests
from inferlab.load.workload import Workload
from inferlab.metrics.checks import warning
from inferlab.summary import RunWarning

SLOW_ENDPOINT = "slow_endpoint"  # the warning's code


@dataclass(frozen=True, slots=True)
class Asked:
    """What the run asks of the server: its workload, --settle-slots (None: the default,
    llama-server only), --tokenizer FILE's counter."""

    load: Workload
    settle_slots: bool | None = None
    tokenizer: LocalCounter | None = None


@dataclass(slots=True)
class Preflight:
    """What the checks found: the slots to settle before each level (0: none), where
    prompts are counted (None: nowhere on the server), the tokens a chat template adds
    (--api chat), and the side endpoints done without."""

    slots: int = 0
    count_at: str | None = None
    template_tokens: int | None = None
    warnings: list[RunWarning] = field(default_factory=list)

    def without(self, what: str, e: AnswerTooSlow, instead: str) -> None:
        self.warnings.append(warning(SLOW_ENDPOINT, "run", "warning", f"{what}: {e}; {instead}"))


async def preflight(
    session: aiohttp.ClientSession, asked: Asked, info: ServerInfo, endpoint: Endpoint
) -> Preflight:
    """Before anything is written, and before any level: see the module's docstring."""
    from inferlab.bench.server_limits import check_chat, check_stream

    found = Preflight(count_at=info.root_url)
    deadline_s = query_deadline_s(endpoint.request_timeout_s)
    w = asked.load
    props = await _props(asked.settle_slots, info, endpoint, found, deadline_s)
    _check_context(w, info, endpoint.model, props)
    if w.conversation is not None:
        await check_chat(session, endpoint)
    first = await check_stream(session, endpoint)
    await _check_tokenize(session, info, endpoint.model, found, deadline_s)
    if endpoint.api == "chat" and w.conversation is None and first.prompt_tokens is not None:
        bare = await _bare_tokens(session, found.count_at, endpoint, asked.tokenizer)
        if bare is not None and first.prompt_tokens >= bare:
            found.template_tokens = first.prompt_tokens - bare
    if asked.settle_slots is False or (asked.settle_slots is None and info.kind != "llamacpp"):
        return found
    found.slots = slot_count(info.kind, props, info.base_url, insist=asked.settle_slots is True)
    return found


async def _check_tokenize(
    session: aiohttp.ClientSession,
    info: ServerInfo,
    model: str,
    found: Preflight,
    deadline_s: float,
) -> None:
    """/tokenize asked once: where it is too slow, no prompt asks it again."""
    try:
        await server_count(session, info.root_url, model, "hello", deadline_s)
    except AnswerTooSlow as e:
        found.count_at = None
        found.without("POST /tokenize", e, "prompt lengths are checked only against usage")


async def _props(
    insist: bool | None, info: ServerInfo, endpoint: Endpoint, found: Preflight, deadline_s: float
) -> dict[str, Any] | None:
    """llama-server's /props, read once for its context and its slots (None: not a
    llama-server, or no answer). Where it is too slow, both are done without (or, with
    --settle-slots, the run is refused, as for a server that does not state its slots)."""
    if info.kind != "llamacpp" and insist is not True:
        return None
    url = props_url(info.base_url)
    try:
        return await asyncio.to_thread(fetch_props, url, endpoint.headers(), deadline_s)
    except AnswerTooSlow as e:
        if insist:
            raise InferlabError(f"--settle-slots needs {url}: {e}") from e
        instead = "request lengths were not checked against its context, nor its slots settled"
        found.without("GET /props", e, instead)
        return None


def _check_context(w: Workload, info: ServerInfo, model: str, props: dict[str, Any] | None) -> None:
    from inferlab.bench.server_limits import context_tokens

    found = context_tokens(info, model, props)
    if found is None:
        return
    n_ctx, source = found
    if w.trace is not None:
        from inferlab.load.traces import check_context

        check_context(w.trace.trace, n_ctx, source)
        return
    for level in w.levels:
        check_context_fits(w.requests(level), n_ctx, level.label, source)


async def _bare_tokens(
    session: aiohttp.ClientSession,
    count_at: str | None,
    endpoint: Endpoint,
    tokenizer: LocalCounter | None,
) -> int | None:
    """--api chat: the first request's message alone, counted (/tokenize or --tokenizer);
    its usage.prompt_tokens less this is what the chat template adds to each message, so
    that prompt lengths are checked after the template, not against the bare message."""
    from inferlab.bench.prompt_text import count_tokens
    from inferlab.bench.server_limits import PROBE_TEXT

    return await count_tokens(session, count_at, endpoint.model, PROBE_TEXT, tokenizer)


def check_context_fits(reqs: Requests, n_ctx: int, label: str, source: str) -> None:
    """Refuse a level whose longest request does not fit the server's context."""
    longest = reqs.prompt_tokens + reqs.output_tokens
    if len(longest) and int(longest.max()) > n_ctx:
        i = int(longest.argmax())
        raise InferlabError(
            f"level {label}: request {i} needs {int(longest[i])} tokens "
            f"({int(reqs.prompt_tokens[i])} prompt + {int(reqs.output_tokens[i])} output), "
            f"beyond {source} of {n_ctx}; shorten --prompt-tokens / --output-tokens"
        )
