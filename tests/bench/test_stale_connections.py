"""A pooled keep-alive connection the server has closed: the request never reached the
server, so it is sent again, on a new connection of its own. The fake here serves one
request per connection and drops any later one on it without answering (what a client
sees when the server closed the connection as the request went out); the pool holds
five such connections when the request is sent."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web

from inferlab.bench.client import Endpoint, make_connector, stream_request
from inferlab.records import RequestRecord

EVENT = b'data: {"choices":[{"index":0,"text":" a","finish_reason":null}]}\n\n'
SERVED = web.AppKey("served", set)
LAST = b'data: {"choices":[{"index":0,"text":"","finish_reason":"length"}]}\n\n'


def _rec(i: int) -> RequestRecord:
    return RequestRecord(i, "c=1", "measure", 4, 2, prompt_sha1="", scheduled_ns=0)


async def _one_request_per_connection(request: web.Request) -> web.StreamResponse:
    served = request.app[SERVED]
    transport = request.transport
    assert transport is not None
    peer = transport.get_extra_info("peername")  # the client's port names its connection
    if peer in served:  # a second request on this connection: drop it unanswered
        transport.close()
        raise ConnectionResetError
    served.add(peer)
    await request.read()
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    for chunk in (EVENT, EVENT, LAST, b"data: [DONE]\n\n"):
        await resp.write(chunk)
    return resp


async def _run() -> tuple[list[RequestRecord], RequestRecord]:
    app = web.Application()
    app[SERVED] = set()
    app.router.add_post("/v1/completions", _one_request_per_connection)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    endpoint = Endpoint(f"http://127.0.0.1:{port}/v1", "m", force_length=False)
    try:
        async with aiohttp.ClientSession(connector=make_connector(8)) as session:
            burst = await asyncio.gather(
                *(stream_request(session, endpoint, _rec(i), "hi", 0) for i in range(5))
            )
            later = await stream_request(session, endpoint, _rec(5), "hi", 0)
    finally:
        await runner.cleanup()
    return list(burst), later


def test_a_request_on_stale_pooled_connections_is_resent_on_a_new_one() -> None:
    burst, later = asyncio.run(_run())
    assert all(r.ok and r.retries == 0 for r in burst)  # five connections, now pooled
    # its first try took a pooled connection the server dropped; the retry a new one
    assert later.ok and later.error is None, later.error
    assert later.retries == 1
    assert later.resent_after is not None  # what the lost try met, in words
    assert all(r.resent_after is None for r in burst)
    assert len(later.event_ns) >= 2
