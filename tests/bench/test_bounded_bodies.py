"""Every other body the client reads stops at a stated bound: /v1/models, /tokenize, /metrics,
/props and error bodies; over it, one error naming the URL and the bound."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from inferlab.bench.client import Endpoint, stream_request
from inferlab.bench.prompt_text import count_tokens
from inferlab.bench.server import probe_server
from inferlab.httpbody import (
    MAX_ERROR_BYTES,
    MAX_JSON_BYTES,
    MAX_METRICS_BYTES,
    BodyTooLarge,
    read_bounded,
    read_bounded_sync,
    tokenize_limit_bytes,
)
from inferlab.records import RequestRecord
from inferlab.servermetrics.dialects import MetricsUnparsable
from inferlab.servermetrics.scrape import scrape_once
from inferlab.watch.served import served_model
from tests.bench.bounded_app import Script, make_app, serve


def _run(base: str, job: Callable[[aiohttp.ClientSession], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with aiohttp.ClientSession() as session:
            return await job(session)

    return asyncio.run(main())


def test_sync_reader_stops_one_byte_past_the_bound() -> None:
    fp = io.BytesIO(b"a" * 1000)
    assert read_bounded_sync(fp, "http://x/y", 1000) == b"a" * 1000
    fp = io.BytesIO(b"a" * 10_000)
    with pytest.raises(BodyTooLarge) as e:
        read_bounded_sync(fp, "http://x/y", 1000)
    assert fp.tell() == 1001  # read no further than it had to
    assert "http://x/y" in str(e.value) and "1000 bytes" in str(e.value)


@pytest.mark.slow
def test_models_listing_is_bounded() -> None:
    with serve(make_app(Script(endless_paths={"/v1/models"}))) as base:
        with pytest.raises(BodyTooLarge) as e:
            _run(base, lambda s: probe_server(s, f"{base}/v1", {}))
        assert f"{base}/v1/models" in str(e.value) and str(MAX_JSON_BYTES) in str(e.value)
        with pytest.raises(BodyTooLarge):  # watch's reading of the same listing
            served_model(base)


@pytest.mark.slow
def test_tokenize_is_bounded_by_the_prompt() -> None:
    text = "word " * 100
    app = make_app(Script(endless_paths={"/tokenize"}))
    with serve(app) as base, pytest.raises(BodyTooLarge) as e:
        _run(base, lambda s: count_tokens(s, base, "m", text))
    assert f"{base}/tokenize" in str(e.value)
    assert str(tokenize_limit_bytes(text)) in str(e.value)


@pytest.mark.slow
def test_metrics_are_bounded() -> None:
    with serve(make_app(Script(endless_paths={"/metrics"}))) as base:
        url = f"{base}/metrics"
        with pytest.raises(MetricsUnparsable) as e2:
            scrape_once(url, 30.0)
        assert url in str(e2.value) and str(MAX_METRICS_BYTES) in str(e2.value)


@pytest.mark.slow
def test_error_body_is_bounded() -> None:
    with serve(make_app(Script(error_status=500))) as base:

        async def one(s: aiohttp.ClientSession) -> RequestRecord:
            rec = RequestRecord(0, "c=1", "measure", 8, 4)
            return await stream_request(s, Endpoint(f"{base}/v1", "m"), rec, "p", 0)

        rec = _run(base, one)
    assert rec.http_status == 500 and rec.error is not None
    assert rec.error.startswith("HTTP 500: ") and str(MAX_ERROR_BYTES) in rec.error


@pytest.mark.slow
def test_declared_length_over_the_bound_fails_before_reading() -> None:
    async def job(s: aiohttp.ClientSession) -> bytes:
        async with s.get(f"{base}/declared") as r:
            return await read_bounded(r, 1 << 20)

    # The server sends 1 byte of a declared 1 GiB and holds: a client that read on would get
    # a payload error when it gives up, not BodyTooLarge.
    with serve(make_app(Script())) as base, pytest.raises(BodyTooLarge):
        _run(base, job)
