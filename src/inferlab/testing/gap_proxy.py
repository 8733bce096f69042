"""A proxy that makes a server slower by a known share: every inter-token gap x (1 + stretch).

For checking a comparison against a change of known size (issue 47): the same server
behind this proxy is "B, X % slower per token", on the same machine, at the same time.
Every request is forwarded as it came; a streamed answer's first event passes at once
(TTFT unchanged), and each later event is held until the previous one's release plus the
upstream's own gap x (1 + stretch), never released before it arrived. Other answers
(/v1/models, /props, /tokenize, /metrics) pass whole.

    python -m inferlab.testing.gap_proxy --upstream http://127.0.0.1:8080 --stretch 0.10
    (prints "PORT <n>" once it listens; give bench http://127.0.0.1:<n>/v1)
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping

import aiohttp
from aiohttp import web

from inferlab.testing.fake_server import serving
from inferlab.testing.fake_steps import listen

UPSTREAM = web.AppKey("upstream", str)
STRETCH = web.AppKey("stretch", float)
SESSION = web.AppKey("session", aiohttp.ClientSession)
HOP = {"content-length", "transfer-encoding", "connection", "content-encoding", "host"}


class Pacer:
    """When each event of one stream leaves: the first as it arrived, each next one the
    previous release plus its upstream gap x (1 + stretch), and never before it arrived."""

    def __init__(self, stretch: float) -> None:
        self.stretch = stretch
        self.last_in_s: float | None = None
        self.last_out_s = 0.0

    def due(self, arrived_s: float) -> float:
        if self.last_in_s is None:
            out = arrived_s
        else:
            gap_s = arrived_s - self.last_in_s
            out = max(arrived_s, self.last_out_s + gap_s * (1.0 + self.stretch))
        self.last_in_s, self.last_out_s = arrived_s, out
        return out


DONE = b"data: [DONE]"


async def _events(resp: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The upstream's SSE body, one whole event (ending in a blank line) at a time, up to
    its `[DONE]`: the answer ends there (llama-server may hold its connection open for
    seconds after it, which would add those seconds to every request through here)."""
    buf = b""
    async for chunk in resp.content.iter_any():
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            yield event + b"\n\n"
            if event.strip() == DONE:
                return
    if buf:
        yield buf


async def _stream(request: web.Request, up: aiohttp.ClientResponse) -> web.StreamResponse:
    """The upstream's events, each stamped as it arrives (a reader of its own: stamped
    after the last release instead, every gap would hold the ones before it and grow
    x 1.1 per token), released on the Pacer's schedule."""
    out = web.StreamResponse(status=up.status, headers=_headers(up.headers))
    await out.prepare(request)
    arrived: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

    async def read() -> None:
        try:
            async for event in _events(up):
                arrived.put_nowait((time.perf_counter(), event))
        finally:
            arrived.put_nowait(None)

    reader = asyncio.create_task(read())
    pacer = Pacer(request.app[STRETCH])
    try:
        while (item := await arrived.get()) is not None:
            due = pacer.due(item[0])
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            await out.write(item[1])
    finally:
        reader.cancel()
    await out.write_eof()
    return out


def _headers(h: Mapping[str, str]) -> dict[str, str]:
    """The headers to pass on: all but the hop-by-hop ones each side sets for itself."""
    return {k: v for k, v in h.items() if k.lower() not in HOP}


async def forward(request: web.Request) -> web.StreamResponse:
    """Any request, forwarded; a streamed answer's gaps stretched."""
    url = request.app[UPSTREAM] + request.path_qs
    body = await request.read()
    session = request.app[SESSION]
    async with session.request(
        request.method, url, data=body or None, headers=_headers(request.headers)
    ) as up:
        if up.content_type == "text/event-stream":
            return await _stream(request, up)
        data = await up.read()
        return web.Response(status=up.status, body=data, headers=_headers(up.headers))


def make_app(upstream: str, stretch: float) -> web.Application:
    app = web.Application()
    app[UPSTREAM], app[STRETCH] = upstream.rstrip("/"), stretch

    async def session(app: web.Application) -> AsyncIterator[None]:
        timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
        app[SESSION] = aiohttp.ClientSession(timeout=timeout, auto_decompress=False)
        yield
        await app[SESSION].close()

    app.cleanup_ctx.append(session)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


@contextlib.contextmanager
def running_gap_proxy(upstream: str, stretch: float) -> Iterator[str]:
    """The proxy in its own process before `upstream` (a server's root or /v1 URL); yield
    its /v1 base URL."""
    root = upstream.rstrip("/").removesuffix("/v1")
    with serving(
        "inferlab.testing.gap_proxy", ["--upstream", root, "--stretch", str(stretch)]
    ) as u:
        yield u


def main() -> None:
    """`--port N --upstream ROOT --stretch X` (no argparse: a fake's command line is its
    launcher's, running_gap_proxy)."""
    args = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
    app = make_app(args["--upstream"], float(args["--stretch"]))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(app, int(args.get("--port", "0"))))


async def _serve(app: web.Application, port: int) -> None:
    await listen(app, port)
    await asyncio.Event().wait()  # until the launcher terminates this process


if __name__ == "__main__":
    main()
