"""The fake server's scenarios: the model name picks one behaviour, one handler each.

Adding a scenario is writing one small `async def name(s: Stream)` here and one line in
SCENARIOS. A handler calls `s.open()` (log the request, start the stream), paces its
tokens with `s.paced(n)`, writes them with `s.token()` / `s.send()`, and ends with
`s.finish(reason)`, or stops however it misbehaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from inferlab.testing.fake_slo import SLO_SCENARIOS
from inferlab.testing.fake_stream import Stream, sleep_until

Scenario = Callable[[Stream], Awaitable[web.StreamResponse]]

# "endless" keeps streaming past max_tokens with no finish_reason and no [DONE]; it stops
# only when the client hangs up (or after this many tokens, so no test can hang on it).
ENDLESS_CAP_TOKENS = 100_000
# "endless-burst" does the same in bursts: this many one-token events in one write, as a
# loaded machine's reader finds them in one chunk; the client must cut at the crossing one.
BURST_EVENTS = 64
STALL_S = 30.0  # "stall" sends 5 tokens, then nothing for this long, then hangs up
MISBEHAVE_AT = 5  # the token index at which error-mid-stream, drop and stall misbehave


async def fake(s: Stream) -> web.StreamResponse:
    """max_tokens tokens on the script's schedule, finish "length"."""
    await s.open()
    async for _, k in s.paced(s.max_tokens):
        await s.token(" tok" * k)
    return await s.finish("length")


async def early_stop(s: Stream) -> web.StreamResponse:
    """Half the tokens asked for (at least 2), finish "stop"."""
    await s.open()
    async for _, k in s.paced(max(2, s.max_tokens // 2)):
        await s.token(" tok" * k)
    return await s.finish("stop")


async def multi_token(s: Stream) -> web.StreamResponse:
    """Two tokens per event, each event carrying the running usage."""
    await s.open()
    async for _, k in s.paced(s.max_tokens, per_event=2):
        usage = {"prompt_tokens": s.prompt_tokens, "completion_tokens": s.sent}
        await s.send(s.chunk(" tok" * k, None, usage))
    return await s.finish("length")


async def error_mid_stream(s: Stream) -> web.StreamResponse:
    """An error event in place of token 5, then the stream just ends."""
    await s.open()
    async for j, k in s.paced(s.max_tokens):
        if j == MISBEHAVE_AT:
            await s.resp.write(b'data: {"error": {"message": "CUDA out of memory"}}\n\n')
            return s.resp
        await s.token(" tok" * k)
    return await s.finish("length")


async def http_429(s: Stream) -> web.StreamResponse:
    """Rate limited before any stream starts."""
    return web.json_response({"error": {"message": "rate limited"}}, status=429)


async def drop(s: Stream) -> web.StreamResponse:
    """The connection closed at token 5."""
    await s.open()
    async for j, k in s.paced(s.max_tokens):
        if j == MISBEHAVE_AT:
            assert s.request.transport is not None
            s.request.transport.close()
            return s.resp
        await s.token(" tok" * k)
    return await s.finish("length")


async def malformed(s: Stream) -> web.StreamResponse:
    """After token 3, an event that is not JSON and a line with no colon."""
    await s.open()
    async for j, k in s.paced(s.max_tokens):
        await s.token(" tok" * k)
        if j == 3:
            await s.resp.write(b"data: {not json\n\nthis line has no colon\n\n")
    return await s.finish("length")


async def split_utf8(s: Stream) -> web.StreamResponse:
    """Each token "é日", its event cut inside the 2-byte é: the client must reassemble."""
    await s.open()
    async for _, _k in s.paced(s.max_tokens):
        data = s.chunk("é日")
        cut = data.index("é".encode()) + 1
        s.writes.append(time.perf_counter_ns())  # logged as the first half leaves
        await s.resp.write(data[:cut])
        await s.resp.drain()
        await s.resp.write(data[cut:])
    return await s.finish("length")


async def over_max(s: Stream) -> web.StreamResponse:
    """usage.completion_tokens over max_tokens (the prompt's tokens counted in)."""
    await s.open()
    async for _, k in s.paced(s.max_tokens):
        await s.token(" tok" * k)
    return await s.finish("length", s.sent + s.prompt_tokens)


async def endless(s: Stream) -> web.StreamResponse:
    """Tokens on the script's schedule, past any max_tokens, never a finish or [DONE]."""
    await s.open()
    with contextlib.suppress(ConnectionError):
        for j in range(ENDLESS_CAP_TOKENS):
            await sleep_until(s.t_recv_s + s.script.ttft_s + j * s.script.tpot_s)
            await s.resp.write(s.chunk(" tok"))
    return s.resp


async def endless_burst(s: Stream) -> web.StreamResponse:
    """As endless, BURST_EVENTS one-token events per write: a chunk past any cut point."""
    await s.open()
    burst = s.chunk(" tok") * BURST_EVENTS
    with contextlib.suppress(ConnectionError):
        for j in range(ENDLESS_CAP_TOKENS // BURST_EVENTS):
            await sleep_until(s.t_recv_s + s.script.ttft_s + j * s.script.tpot_s)
            await s.resp.write(burst)
    return s.resp


async def stall(s: Stream) -> web.StreamResponse:
    """5 tokens, then silent with the connection open for STALL_S, then hang up."""
    await s.open()
    async for j, k in s.paced(s.max_tokens):
        if j == MISBEHAVE_AT:
            await asyncio.sleep(STALL_S)
            return s.resp
        await s.token(" tok" * k)
    return await s.finish("length")


SCENARIOS: dict[str, Scenario] = {
    "fake": fake,
    "early-stop": early_stop,
    "multi-token": multi_token,
    "error-mid-stream": error_mid_stream,
    "http-429": http_429,
    "drop": drop,
    "malformed": malformed,
    "split-utf8": split_utf8,
    "over-max": over_max,
    "endless": endless,
    "endless-burst": endless_burst,
    "stall": stall,
    **SLO_SCENARIOS,  # crowded-K, slo-mix, reasoning (fake_slo.py)
}
