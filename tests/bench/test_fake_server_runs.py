"""Bench against a scripted server whose token timings are known exactly.

Truth comes from the server's own log of when it wrote each token (both
processes read the same monotonic clock), and from its script (TTFT, TPOT).
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from inferlab.bench.benchmark import BenchConfig, BenchResult, event_loop_runner, run_benchmark
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.records import read_records
from inferlab.testing.fake_server import Script

from .conftest import FAKE_URL_SCRIPT, fake_server

pytestmark = pytest.mark.slow  # the scripted fake server, in its own process


def bench(
    url: str,
    tmp: Path,
    model: str = "fake",
    levels: tuple[int, ...] = (1,),
    n: int = 8,
    out_tokens: int = 40,
    **kw: Any,
) -> BenchResult:
    cfg = BenchConfig(
        url=url,
        model=model,
        load=Workload.fixed(
            prompt_tokens=16,
            output_tokens=out_tokens,
            levels=[Level("concurrency", c) for c in levels],
            requests_per_level=n,
        ),
        out_dir=tmp,
        **kw,
    )
    result: BenchResult = event_loop_runner()(run_benchmark(cfg))
    return result


def server_log(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url.replace("/v1", "/debug/log")) as r:
        log: dict[str, Any] = json.load(r)
        return log


def codes(result: BenchResult) -> set[str]:
    return {w["code"] for w in result.summary.to_json()["warnings"]}


@pytest.mark.parametrize("concurrency", [1, 64])
def test_every_stamp_is_taken_on_read_after_its_write(
    fake_url: str, tmp_path: Path, concurrency: int
) -> None:
    """What the client guarantees, token by token, against the server's own write log (both
    read CLOCK_MONOTONIC): one stamp per token, in order, never before the server wrote
    that token; the request sent before the server received it; and every latency in the
    summary computed from exactly these stamps. How *late* a stamp is depends on the
    machine and its load: benchmarks/stamp_precision.py prints it, no test bounds it."""
    script = FAKE_URL_SCRIPT
    n, out_tokens = (4 if concurrency == 1 else 64), 50
    res = bench(fake_url, tmp_path, levels=(concurrency,), n=n, out_tokens=out_tokens)
    log = server_log(fake_url)
    lv = res.summary.to_json()["levels"][0]
    assert lv["requests_ok"] == n and lv["requests_early_stop"] == 0
    origin = res.summary.to_json()["clock"]["origin_ns"]
    recs = [r for r in read_records(res.records_path) if r.phase == "measure"]
    assert len(recs) == n
    due_s = script.token_offsets_s(out_tokens)
    for r in recs:
        entry = log[r.prompt_sha1]
        writes, stamps = entry["write_ns"], [origin + t for t in r.event_ns]
        assert len(stamps) == len(writes) == out_tokens and r.event_tokens == [1] * out_tokens
        assert origin + r.send_ns <= entry["recv_ns"]
        assert stamps == sorted(stamps)
        assert all(s >= w for s, w in zip(stamps, writes, strict=True))
        # The server keeps its script: no token leaves before it is due (1 us: the
        # schedule is kept in float seconds of a clock that reads ~1e5 s).
        due_ns = [entry["recv_ns"] + d * 1e9 - 1e3 for d in due_s]
        assert all(w >= d for w, d in zip(writes, due_ns, strict=True))
    # The summary is computed from these stamps: the measure phase's, all of them.
    ttft = [(r.event_ns[0] - r.send_ns) / 1e9 for r in recs]
    tpot = [(r.event_ns[-1] - r.event_ns[0]) / 1e9 / (out_tokens - 1) for r in recs]
    # A request whose tokens all came in one read (a client loop blocked for its whole
    # stream, seen under load) has no TPOT to give: the summary leaves it out, as here.
    tpot = [x for x in tpot if x != 0]
    gaps = np.concatenate([np.diff(r.event_ns) / 1e9 for r in recs])
    assert lv["itl_s"]["n"] == n * (out_tokens - 1)
    assert lv["ttft_s"]["p50"] == pytest.approx(np.median(ttft), rel=1e-9)
    assert lv["tpot_s"]["n"] == len(tpot)
    assert ("tpot_unseen" in codes(res)) == (len(tpot) < n)  # and the run says so
    assert lv["tpot_s"]["p50"] == pytest.approx(np.median(tpot), rel=1e-9)
    for p, q in (("p50", 50), ("p90", 90), ("p99", 99)):
        assert lv["itl_s"][p] == pytest.approx(np.percentile(gaps, q), rel=1e-9), p
    # A stamp never precedes its write, so no TTFT is shorter than the script's.
    assert min(ttft) >= script.ttft_s - 1e-6


def test_early_stop_is_flagged(fake_url: str, tmp_path: Path) -> None:
    res = bench(fake_url, tmp_path, model="early-stop", n=3)
    lv = res.summary.to_json()["levels"][0]
    assert lv["requests_early_stop"] == 3
    assert "early_stop" in codes(res)


def test_multi_token_events_split_and_counted(fake_url: str, tmp_path: Path) -> None:
    res = bench(fake_url, tmp_path, model="multi-token", n=3, out_tokens=20)
    lv = res.summary.to_json()["levels"][0]
    assert lv["multi_token_events"] == 3 * 10
    assert lv["completion_tokens_p50"] == 20
    assert lv["itl_s"]["n"] == 3 * 18  # first event's second token has no gap of its own
    assert "multi_token_events" in codes(res)
    assert lv["requests_early_stop"] == 0


def test_error_mid_stream_is_a_failed_record(fake_url: str, tmp_path: Path) -> None:
    res = bench(fake_url, tmp_path, model="error-mid-stream", n=2)
    recs = read_records(res.records_path)
    assert all(r.error and "CUDA out of memory" in r.error for r in recs)
    assert res.summary.to_json()["levels"][0]["requests_failed"] == 2
    assert "requests_failed" in codes(res)


def test_http_429(fake_url: str, tmp_path: Path) -> None:
    res = bench(fake_url, tmp_path, model="http-429", n=2)
    recs = read_records(res.records_path)
    assert all(r.http_status == 429 and r.error and "429" in r.error for r in recs)
    assert "requests_failed" in codes(res)


def test_connection_drop(fake_url: str, tmp_path: Path) -> None:
    res = bench(fake_url, tmp_path, model="drop", n=2)
    recs = [r for r in read_records(res.records_path) if r.phase == "measure"]
    assert all(not r.ok and r.error for r in recs)
    assert all(len(r.event_ns) == 5 for r in recs)  # what arrived before the drop is kept


def test_malformed_sse_skipped_and_counted(fake_url: str, tmp_path: Path) -> None:
    res = bench(fake_url, tmp_path, model="malformed", n=2, out_tokens=10)
    lv = res.summary.to_json()["levels"][0]
    assert lv["requests_ok"] == 2 and lv["requests_early_stop"] == 0
    assert lv["malformed_events"] >= 4
    assert "malformed_events" in codes(res)


def test_split_utf8(fake_url: str, tmp_path: Path) -> None:
    res = bench(fake_url, tmp_path, model="split-utf8", n=2, out_tokens=10)
    lv = res.summary.to_json()["levels"][0]
    assert lv["requests_ok"] == 2 and lv["malformed_events"] == 0
    assert lv["completion_tokens_p50"] == 10 and lv["streamed_tokens_mismatch"] == 0


def test_prompt_counted_as_output(fake_url: str, tmp_path: Path) -> None:
    res = bench(fake_url, tmp_path, model="over-max", n=2, out_tokens=10)
    assert "output_over_max" in codes(res)


def test_chat_api(fake_url: str, tmp_path: Path) -> None:
    res = bench(fake_url, tmp_path, n=2, out_tokens=10, api="chat")
    assert res.summary.to_json()["levels"][0]["requests_ok"] == 2


def test_records_and_summary_written(fake_url: str, tmp_path: Path) -> None:
    res = bench(fake_url, tmp_path, levels=(1, 2), n=4, out_tokens=10)
    recs = read_records(res.records_path)
    assert len(recs) == (1 + 4) + (2 + 4)  # warm-up one request per stream, kept but excluded
    assert {r.phase for r in recs} == {"warmup", "measure"}
    s = json.loads(res.summary_path.read_text())
    assert s["schema_version"] == 1
    assert [lv["concurrency"] for lv in s["levels"]] == [1, 2]
    assert s["server"]["models_answer"]["data"]
    for key in ("p50", "p90", "p95", "p99", "p999", "max", "mean"):
        assert key in s["levels"][0]["itl_s"]
    # Unique prompts with exact token counts (the fake counts one token per word).
    assert len({r.prompt_sha1 for r in recs}) == len(recs)
    assert all(r.prompt_tokens == 16 for r in recs)


def test_rate_mode_records_queueing(fake_url: str, tmp_path: Path) -> None:
    cfg = BenchConfig(
        url=fake_url,
        model="fake",
        load=Workload.fixed(
            prompt_tokens=8, output_tokens=5, levels=[Level("rate", 20.0)], requests_per_level=10
        ),
        out_dir=tmp_path,
    )
    res = asyncio.run(run_benchmark(cfg))
    lv = res.summary.to_json()["levels"][0]
    assert lv["rate_per_s"] == 20.0 and lv["requests_ok"] == 10
    recs = sorted(read_records(res.records_path), key=lambda r: r.request_id)
    # Sends keep the seeded schedule the load spine drew (load/), whatever the server or
    # the machine does: the measured requests' instants are the specs' arrivals, to the ns.
    arrivals = cfg.load.requests(Level("rate", 20.0)).arrival_s.tolist()
    meas = [r for r in recs if r.phase == "measure"]
    assert len(meas) == len(arrivals) == 10
    got = [(r.scheduled_ns - meas[0].scheduled_ns) / 1e9 for r in meas]
    assert got == pytest.approx([t - arrivals[0] for t in arrivals], abs=2e-9)
    assert all(w.scheduled_ns < meas[0].scheduled_ns for w in recs if w.phase == "warmup")
    # Each request's wait in the client is recorded: scheduled -> sent, never negative.
    delays = [(r.send_ns - r.scheduled_ns) / 1e9 for r in recs if r.phase == "measure"]
    assert min(delays) >= 0
    assert lv["queue_delay_s"]["max"] == pytest.approx(max(delays), rel=1e-9)


def test_floor_comparison_and_ceiling(fake_url: str, tmp_path: Path) -> None:
    from inferlab.physics.floor import Floor
    from inferlab.specs.cost import ModelCost
    from inferlab.specs.hardware import STATED, with_overrides

    # A made-up floor: 1 GB per step at 1 TB/s -> 1 ms floor; the fake runs ~11.6 ms/token.
    floor = Floor(ModelCost.stated(1e9), with_overrides(STATED, 1e12, 1e15))
    res = bench(fake_url, tmp_path, n=3, out_tokens=20, floor=floor)
    lv = res.summary.to_json()["levels"][0]
    assert lv["predicted_step_time_s"] == pytest.approx(1e-3)
    assert lv["mbu"] == pytest.approx(1e-3 / lv["tpot_s"]["p50"], rel=1e-6)
    assert lv["mbu"] > 0
    # A floor that says the fake is impossibly fast: 100 TB per step, 100 s a token.
    fast = Floor(ModelCost.stated(100e12), with_overrides(STATED, 1e12, 1e15))
    res = bench(fake_url, tmp_path / "b", n=3, out_tokens=20, floor=fast)
    assert "above_ceiling" in codes(res)


def test_rate_mode_client_queueing_is_queue_delay_not_ttft(tmp_path: Path) -> None:
    # 2 connections, >= 0.48 s per request (the server's schedule), 20 arrivals/s: most
    # requests wait in the client. That wait is queue delay: the send is stamped only once
    # a connection is free, so TTFT (send -> first token) cannot contain it.
    script = Script(ttft_s=0.03, tpot_s=0.05, slow_every=0)
    tokens = 10
    with fake_server(ttft=script.ttft_s, tpot=script.tpot_s, slow_every=0) as url:
        cfg = BenchConfig(
            url=url,
            model="fake",
            load=Workload.fixed(
                prompt_tokens=4,
                output_tokens=tokens,
                levels=[Level("rate", 20.0)],
                requests_per_level=8,
                warmup=0,
            ),
            max_connections=2,
            out_dir=tmp_path,
        )
        res = event_loop_runner()(run_benchmark(cfg))
    lv = res.summary.to_json()["levels"][0]
    assert lv["requests_ok"] == 8
    recs = sorted(read_records(res.records_path), key=lambda r: r.request_id)
    # When each request was sent, at most one other was still streaming: the gate is passed
    # before the send is stamped (stamped before it, 2 would be streaming at most sends).
    for r in recs:
        busy = [o for o in recs if o is not r and o.send_ns < r.send_ns < o.event_ns[-1]]
        assert len(busy) <= 1, (r.request_id, [o.request_id for o in busy])
    # Request k cannot be sent before k // 2 requests ran one after another on one
    # connection, each at least the script's length: so much of it is queue delay.
    min_run_s = script.token_offsets_s(tokens)[-1]
    t0 = recs[0].scheduled_ns
    for k, r in enumerate(recs):
        floor_s = k // 2 * min_run_s - (r.scheduled_ns - t0) / 1e9
        assert (r.send_ns - r.scheduled_ns) / 1e9 >= floor_s
    assert lv["queue_delay_s"]["max"] > 0.5  # the last request's floor here is ~1 s
    assert min((r.event_ns[0] - r.send_ns) / 1e9 for r in recs) >= script.ttft_s
