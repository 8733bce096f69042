"""A stream's memory is bounded and its parsing linear: an endless SSE line fails one request
as malformed_stream, at once, while the others complete; no byte is scanned twice."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferlab.bench import client as client_mod
from inferlab.bench.benchmark import BenchConfig, run_benchmark
from inferlab.bench.client import MALFORMED_STREAM, Endpoint, stream_request
from inferlab.bench.sse import DEFAULT_MAX_EVENT_BYTES, EventTooLong, SSEParser
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.records import RequestRecord, read_records
from tests.bench.bounded_app import Script, make_app, serve

# Streams captured from real servers (llama-server b11434, vLLM 0.32 CPU), byte for byte.
FIXTURES = Path(__file__).parent / "fixtures"
MiB = 1 << 20


def _feed_all(p: SSEParser, data: bytes, size: int) -> tuple[list[str], int, list[int]]:
    """Feed `data` in `size`-byte reads: (events, feeds, scan positions after each feed)."""
    events, positions = [], []
    for i in range(0, len(data), size):
        events += p.feed(data[i : i + size])
        positions.append(p.scan_pos)
    return events, len(positions), positions


@pytest.mark.parametrize(
    ("line_bytes", "size"), [(256 << 10, 1), (256 << 10, 7), (10 * MiB, 4096), (10 * MiB, 65536)]
)
def test_a_long_line_is_scanned_once(line_bytes: int, size: int) -> None:
    # 1- and 7-byte reads use a 256 KiB line: 10 M Python calls would test the interpreter.
    p = SSEParser(max_event_bytes=None)
    line = b"data: " + b"y" * (line_bytes - 6)
    events, feeds, positions = _feed_all(p, line, size)
    assert events == []
    assert positions == sorted(positions) and positions[-1] == len(line)  # only moves forward
    assert p.pending_bytes == len(line)
    # Each read re-examines at most the 3 bytes a "\r\n\r\n" may straddle, never the line.
    assert len(line) <= p.scanned_bytes <= len(line) + 3 * feeds
    assert p.feed(b"\n\n") == [line[6:].decode()]
    assert p.pending_bytes == 0


@pytest.mark.parametrize("size", [1, 3, 64, 65536])
def test_many_events_cost_linear_and_split_anywhere(size: int) -> None:
    one = b'data: {"choices":[{"text":" hi"}]}\r\n\r\n: keep-alive\n\ndata: x\rdata: y\r\r'
    stream = one * 2000
    p = SSEParser()
    events, feeds, _ = _feed_all(p, stream, size)
    assert events == ['{"choices":[{"text":" hi"}]}', "x\ny"] * 2000
    assert p.scanned_bytes <= len(stream) + 3 * feeds


def _reference(stream: bytes) -> list[str]:
    """The old parser's rule, on the whole stream at once: split at the leftest terminator."""
    p, out, buf = SSEParser(None), [], stream
    while (m := re.search(rb"\r\n\r\n|\n\n|\r\r", buf)) is not None:
        out += p.feed(buf[: m.end()])
        buf = buf[m.end() :]
    return out + p.feed(buf)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from([b"\r", b"\n", b"data: a", b"data:\xc3\xa9", b": c", b"x"])),
    cuts=st.lists(st.integers(min_value=1, max_value=7), max_size=40),
)
def test_any_split_gives_the_events_of_the_whole(pieces: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(pieces)
    p, got, i = SSEParser(), [], 0
    for n in cuts:
        got += p.feed(stream[i : i + n])
        i += n
    got += p.feed(stream[i:])
    assert got == _reference(stream)


def test_an_event_past_the_bound_raises_as_soon_as_it_passes() -> None:
    bound, size = MiB, 65536
    p = SSEParser(max_event_bytes=bound)
    fed = 0
    with pytest.raises(EventTooLong) as e:
        for _ in range(10 * MiB // size):  # a 10 MB line without a newline
            fed += size
            p.feed(b"z" * size)
    assert bound < fed <= bound + size  # raised on the read that passed the bound
    assert p.pending_bytes <= bound + size  # memory: the bound plus one read
    assert e.value.max_event_bytes == bound and "--max-event-bytes" in str(e.value)


def test_the_bound_counts_whole_events_too() -> None:
    at = b"data: " + b"a" * (1000 - 6)
    assert SSEParser(max_event_bytes=1000).feed(at + b"\n\n") == [at[6:].decode()]
    with pytest.raises(EventTooLong):
        SSEParser(max_event_bytes=999).feed(at + b"\n\ndata: next\n\n")


def test_default_bound_is_one_mib() -> None:
    assert MiB == DEFAULT_MAX_EVENT_BYTES
    assert SSEParser().max_event_bytes == MiB


FIXTURE_STREAMS = [
    "llama-server-b11434/completions-stream.sse",
    "vllm-0.32-cpu/chat-stream-usage.sse",
    "vllm-0.32-cpu/completions-stream-continuous-usage.sse",
]


@pytest.mark.parametrize("name", FIXTURE_STREAMS)
def test_real_server_streams_still_parse(name: str) -> None:
    raw = (FIXTURES / name).read_bytes()
    whole = SSEParser().feed(raw) + SSEParser().flush()
    assert whole[-1] == "[DONE]" and len(whole) > 3
    assert all("choices" in json.loads(d) for d in whole[:-1])
    for size in (1, 5, 333, 4096):
        p = SSEParser()
        got, _, _ = _feed_all(p, raw, size)
        assert got + p.flush() == whole, size
        assert p.malformed_lines == 0


class _SpyParser(SSEParser):
    """The client's parser, noting the most bytes it ever held."""

    made: list[_SpyParser] = []

    def __init__(self, max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES) -> None:
        super().__init__(max_event_bytes)
        self.peak = 0
        _SpyParser.made.append(self)

    def feed(self, chunk: bytes) -> list[str]:
        try:
            return super().feed(chunk)
        finally:
            self.peak = max(self.peak, self.pending_bytes)


def _rec(i: int) -> RequestRecord:
    return RequestRecord(i, "c=4", "measure", 8, 4)


async def _four_streams(base: str, bound: int) -> list[RequestRecord]:
    async with aiohttp.ClientSession(read_bufsize=1 << 16) as session:
        endpoints = [
            Endpoint(f"{base}/v1", m, max_event_bytes=bound) for m in ("ok", "endless", "ok", "ok")
        ]
        t0 = time.perf_counter_ns()
        return list(
            await asyncio.gather(
                *(stream_request(session, ep, _rec(i), "p", t0) for i, ep in enumerate(endpoints))
            )
        )


def test_an_endless_line_fails_one_request_and_the_others_complete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _SpyParser.made.clear()
    monkeypatch.setattr(client_mod, "SSEParser", _SpyParser)
    bound = 256 << 10
    script = Script()
    with serve(make_app(script)) as base:
        recs = asyncio.run(_four_streams(base, bound))
    endless = recs[1]
    assert endless.error is not None and endless.error.startswith(f"{MALFORMED_STREAM}:")
    assert str(bound) in endless.error
    assert not endless.ok
    assert [r.ok for r in recs] == [True, False, True, True]
    assert all(r.n_out == 4 for r in recs if r.ok)
    # Memory: the endless request's parser never held much more than the bound
    # (one read past it; aiohttp hands over at most its buffer), though the server
    # was ready to send 64 MiB.
    peaks = sorted(p.peak for p in _SpyParser.made)
    assert bound < peaks[-1] <= bound + 4 * (1 << 16) + (1 << 20)


def _bench_cfg(base: str, out: Path, bound: int) -> BenchConfig:
    return BenchConfig(
        url=f"{base}/v1",
        model=None,
        load=Workload.fixed(
            prompt_tokens=8,
            output_tokens=4,
            levels=[Level("concurrency", 2)],
            requests_per_level=4,
            warmup=0,
        ),
        out_dir=out,
        scrape=False,
        max_event_bytes=bound,
        canary=False,  # the server counts requests: the canary's would be among them
    )


def test_bench_records_malformed_stream_and_goes_on(tmp_path: Path) -> None:
    script = Script(endless_request=2)  # the second of the level (0: the first-stream check)
    with serve(make_app(script)) as base:
        res = asyncio.run(run_benchmark(_bench_cfg(base, tmp_path, 128 << 10)))
    lv = res.summary.levels[0]
    assert (lv.requests_ok, lv.requests_failed) == (3, 1)
    recs = read_records(res.records_path)
    bad = [r for r in recs if r.error]
    assert len(bad) == 1 and bad[0].error is not None
    assert bad[0].error.startswith("malformed_stream: an SSE event reached")
    assert "131072 bytes" in bad[0].error


@pytest.mark.slow
def test_cli_flag_reaches_the_client(run_cli: Any, tmp_path: Path) -> None:
    script = Script(endless_request=1)  # the level's first (0: the first-stream check)
    with serve(make_app(script)) as base:
        code, out, err = run_cli(
            "bench", "--url", f"{base}/v1", "--concurrency", "2", "--requests-per-level", "3",
            "--warmup", "0", "--prompt-tokens", "8", "--output-tokens", "4", "--no-scrape",
            "--max-event-bytes", "64KiB", "--out", str(tmp_path / "run"), "--no-plots", "--json",
            "--no-canary",
        )  # fmt: skip
    assert code == 0, err
    s = json.loads(out)
    lv = s["levels"][0]
    assert (lv["requests_ok"], lv["requests_failed"]) == (2, 1)
    assert any("malformed_stream" in e and "65536 bytes" in e for e in lv["errors"])


def test_cli_refuses_a_tiny_bound(run_cli: Any) -> None:
    code, _, err = run_cli("bench", "--url", "http://127.0.0.1:9/v1", "--max-event-bytes", "10")
    assert code == 2 and "--max-event-bytes" in err and "1KiB to 1GiB" in err
