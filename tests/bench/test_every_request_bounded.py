"""Every request bench sends is bounded, the first one (the stream check before any level)
too: a stream that goes on past its forced length is cut and recorded as such, and a request
that never reached the server is sent once more on a fresh connection, and only once.

The hostile server here is real HTTP on loopback. Its endless streams are paced (GAP_S a
token) and capped (CAP_EVENTS), so the count of events it wrote before the client hung up
tells a cut stream (a few dozen) from one read to a byte or time bound (hundreds); no test
decides anything on a clock. Each whole run is bounded by OUTER_S, which can only fail a
test that would otherwise hang, never pass one.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from inferlab.bench.benchmark import BenchConfig, run_benchmark
from inferlab.bench.client import (
    AFTER_FINISH_EVENTS,
    OUTPUT_OVER_MAX,
    Endpoint,
    make_connector,
    over_max_limit,
    stream_request,
)
from inferlab.errors import InferlabError
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.records import RequestRecord, read_records
from tests.bench.bounded_app import serve

GAP_S = 0.005  # between an endless stream's events: each write is its own socket read
CAP_EVENTS = 60_000  # an endless stream's end, 5 min in: no test can hang on the server
OUTER_S = 120.0  # the most any one run here may take; only a hang comes near it
PROBE_TOKENS = 2  # server_limits.PROBE_TOKENS: the first request's forced length
SLACK_EVENTS = 40  # written after the client's cut, before the server sees the hang-up


@dataclass(slots=True)
class Hostile:
    """What the server does with each completion request, and what it saw."""

    mode: str  # "endless", "after_finish", "silent", "drop", "drop_after_headers"
    sent: list[int] = field(default_factory=list)  # events written, per request
    requests: int = 0


HOSTILE = web.AppKey("hostile", Hostile)


def _event(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


TOKEN = _event({"choices": [{"index": 0, "text": " tok", "finish_reason": None}]})
LAST = _event({"choices": [{"index": 0, "text": " tok", "finish_reason": "length"}]})
EMPTY = _event({"choices": []})


async def _stream(request: web.Request, h: Hostile, max_tokens: int) -> web.StreamResponse:
    """`endless`: tokens forever; `after_finish`: max_tokens, the last with its finish_reason,
    then empty events forever, never [DONE]."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    n = 0
    try:
        while n < CAP_EVENTS:
            if h.mode == "endless" or n >= max_tokens:
                chunk = TOKEN if h.mode == "endless" else EMPTY
            else:
                chunk = LAST if n == max_tokens - 1 else TOKEN
            await resp.write(chunk)
            n += 1
            await asyncio.sleep(GAP_S)
    except (ConnectionError, RuntimeError):
        pass  # the client hung up: the cut these tests want
    h.sent.append(n)
    return resp


async def completions(request: web.Request) -> web.StreamResponse:
    h = request.app[HOSTILE]
    h.requests += 1
    body = await request.json()
    transport = request.transport
    assert transport is not None
    if h.mode == "silent":  # headers never come: only the client's deadline ends it
        for _ in range(CAP_EVENTS):  # until the client hangs up (or 5 min)
            if transport.is_closing():
                break
            await asyncio.sleep(GAP_S)
    if h.mode == "drop":  # read, then hang up unanswered: as a closed keep-alive looks
        transport.close()
        raise ConnectionResetError
    if h.mode == "drop_after_headers":  # the server answered, then failed
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(TOKEN)
        transport.close()
        return resp
    return await _stream(request, h, int(body["max_tokens"]))


async def models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": "m", "owned_by": "test"}]})


def _app(h: Hostile) -> web.Application:
    app = web.Application()
    app[HOSTILE] = h
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/v1/models", models)
    return app


def _cfg(base: str, out: Path, timeout_s: float) -> BenchConfig:
    return BenchConfig(
        url=f"{base}/v1",
        model=None,
        load=Workload.fixed(
            prompt_tokens=8,
            output_tokens=4,
            levels=[Level("concurrency", 1), Level("concurrency", 2)],
            requests_per_level=2,
            warmup=0,
        ),
        out_dir=out,
        scrape=False,
        request_timeout_s=timeout_s,
        canary=False,  # the server counts requests: the canary's would be among them
    )


async def _bounded_bench(cfg: BenchConfig) -> Path:
    res = await asyncio.wait_for(run_benchmark(cfg), OUTER_S)
    return res.records_path


@pytest.mark.parametrize("mode", ["endless", "after_finish"])
def test_the_first_request_is_cut_past_its_forced_length(mode: str, tmp_path: Path) -> None:
    # The deadline (600 s) is far past OUTER_S: only the cut can end these streams.
    h = Hostile(mode)
    with serve(_app(h)) as base:
        records = read_records(asyncio.run(_bounded_bench(_cfg(base, tmp_path, 600.0))))
    # The first request (the stream check), cut at its forced length, not read to 64 KiB
    # (about 900 events) or to its deadline.
    cut_at = over_max_limit(PROBE_TOKENS) if mode == "endless" else AFTER_FINISH_EVENTS
    assert cut_at < h.sent[0] <= cut_at + PROBE_TOKENS + SLACK_EVENTS, h.sent
    # then the level's requests, each cut and recorded as such; every one failed, so the
    # sweep stopped after c=1 (no --keep-going)
    assert len(records) == 2 and h.requests == 3
    for r in records:
        assert r.error is not None and r.error.startswith(OUTPUT_OVER_MAX), r.error
        assert not r.ok
    if mode == "after_finish":
        assert all(r.finish_reason == "length" and r.n_out == 4 for r in records)
        assert all(
            "after finish_reason 'length' without [DONE]" in (r.error or "") for r in records
        )


def test_a_first_request_that_never_answers_ends_at_its_deadline(tmp_path: Path) -> None:
    with (
        serve(_app(Hostile("silent"))) as base,
        pytest.raises(InferlabError, match="the first request to .* failed"),
    ):
        asyncio.run(_bounded_bench(_cfg(base, tmp_path, 0.3)))
    assert not (tmp_path / "records.jsonl").exists()  # refused before any level


def _rec(max_tokens: int = 4) -> RequestRecord:
    return RequestRecord(0, "c=1", "measure", 8, max_tokens)


async def _one(base: str, rec: RequestRecord) -> RequestRecord:
    endpoint = Endpoint(f"{base}/v1", "m", request_timeout_s=600.0)
    async with aiohttp.ClientSession(connector=make_connector(4)) as session:
        return await asyncio.wait_for(stream_request(session, endpoint, rec, "hi", 0), OUTER_S)


def test_a_stream_past_max_tokens_is_cut_and_recorded() -> None:
    h = Hostile("endless")
    with serve(_app(h)) as base:
        r = asyncio.run(_one(base, _rec(8)))
    limit = over_max_limit(8)
    assert r.error is not None and r.error.startswith(OUTPUT_OVER_MAX)
    assert f"max_tokens 8 without ending; cut at {limit}" in r.error
    assert limit < r.streamed_tokens < limit + SLACK_EVENTS
    assert r.finish_reason is None and r.retries == 0
    assert h.sent[0] < limit + SLACK_EVENTS


def test_a_stream_that_goes_on_after_its_finish_is_cut() -> None:
    h = Hostile("after_finish")
    with serve(_app(h)) as base:
        r = asyncio.run(_one(base, _rec(4)))
    assert r.error is not None and r.error.startswith(OUTPUT_OVER_MAX), r.error
    assert r.finish_reason == "length" and r.streamed_tokens == 4
    assert h.sent[0] < 4 + AFTER_FINISH_EVENTS + SLACK_EVENTS


def test_a_request_dropped_twice_is_resent_once_then_recorded() -> None:
    h = Hostile("drop")
    with serve(_app(h)) as base:
        r = asyncio.run(_one(base, _rec()))
    assert h.requests == 2  # the first try and one resend, no third
    assert r.retries == 1 and r.resent_after is not None
    assert r.resent_after.startswith(("ServerDisconnectedError", "ClientOSError"))
    assert r.error is not None and r.error.startswith(("ServerDisconnectedError", "ClientOSError"))
    assert r.http_status is None and not r.ok


def test_a_failure_after_the_server_answered_is_never_resent() -> None:
    h = Hostile("drop_after_headers")
    with serve(_app(h)) as base:
        r = asyncio.run(_one(base, _rec()))
    assert h.requests == 1
    assert r.retries == 0 and r.resent_after is None
    assert r.http_status == 200 and r.error is not None and not r.ok


def test_old_records_without_the_field_still_load(tmp_path: Path) -> None:
    old = _rec().to_json()
    del old["resent_after"]
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(old) + "\n")
    (back,) = read_records(path)
    assert back.resent_after is None and back.retries == 0
