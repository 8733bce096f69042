"""A server that goes silent mid-stream: the request is cut after read_timeout_s, what
arrived is kept, and a cancel from the caller still propagates as a cancel."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from inferlab.bench.client import Endpoint, make_connector, stream_request
from inferlab.records import RequestRecord

pytestmark = pytest.mark.slow  # the scripted fake server, in its own process


def _rec() -> RequestRecord:
    return RequestRecord(
        request_id=0,
        level="c=1",
        phase="measure",
        prompt_tokens_target=4,
        max_tokens=20,
        prompt_sha1="",
        scheduled_ns=0,
    )


async def _stream(url: str, read_timeout_s: float) -> tuple[RequestRecord, float]:
    endpoint = Endpoint(url, "stall", read_timeout_s=read_timeout_s)
    async with aiohttp.ClientSession(connector=make_connector(2)) as session:
        t = time.perf_counter()
        rec = await stream_request(session, endpoint, _rec(), "one two three four", 0)
        return rec, time.perf_counter() - t


def test_a_silent_stream_is_cut_after_the_read_timeout(fake_url: str) -> None:
    rec, took_s = asyncio.run(_stream(fake_url, 0.5))
    assert rec.error == "TimeoutError: no data from the server for 0.5 s"
    assert len(rec.event_ns) == 5  # what arrived before the silence is kept
    # Never cut before 0.5 s of silence (the watch re-arms from the last read). The cut is
    # the client's: the server itself would stay silent for STALL_S, then hang up.
    assert took_s >= 0.5


def test_the_callers_cancel_is_not_turned_into_a_timeout(fake_url: str) -> None:
    async def main() -> None:
        task = asyncio.create_task(_stream(fake_url, 0.3))
        await asyncio.sleep(0.2)  # inside the silence, before the watch fires
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
