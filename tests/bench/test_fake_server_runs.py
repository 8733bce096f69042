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
from inferlab.bench.runner import Level
from inferlab.records import read_records

from .conftest import fake_server

MS = 1e-3


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
        levels=[Level("concurrency", c) for c in levels],
        requests_per_level=n,
        prompt_tokens=16,
        output_tokens=out_tokens,
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
def test_timing_truth(tmp_path: Path, concurrency: int) -> None:
    ttft, tpot = 0.05, 0.02
    with fake_server(ttft=ttft, tpot=tpot, slow_every=10) as url:
        n = 16 if concurrency == 1 else 64
        res = bench(url, tmp_path, levels=(concurrency,), n=n, out_tokens=50)
        log = server_log(url)
    lv = res.summary.to_json()["levels"][0]
    assert lv["requests_ok"] == n and lv["requests_early_stop"] == 0
    origin = res.summary.to_json()["clock"]["origin_ns"]
    recs = [r for r in read_records(res.records_path) if r.phase == "measure"]
    true_gaps, true_ttft, true_tpot, lateness, transit = [], [], [], [], []
    for r in recs:
        entry = log[r.prompt_sha1]
        w = np.array(entry["write_ns"], dtype=float)
        arrive = np.array(r.event_ns, dtype=float) + origin
        lateness.extend((arrive - w) / 1e9)  # how late the client saw each token
        true_gaps.extend(np.diff(w) / 1e9)
        sent = origin + r.send_ns
        true_ttft.append((w[0] - sent) / 1e9)  # the server's first write, from our send
        transit.append((entry["recv_ns"] - sent) / 1e9)
        true_tpot.append((w[-1] - w[0]) / 1e9 / (len(w) - 1))
    # Every token is stamped within about a millisecond of when the server wrote it: half
    # of them within 1 ms alone, 1.5 ms at c=64, where a burst of 64 simultaneous events
    # takes the client a few ms to drain (measured 0.4-0.9 ms on a quiet 2-core machine).
    late_p50, late_p99 = np.percentile(lateness, [50, 99])
    assert late_p50 < (1 * MS if concurrency == 1 else 1.5 * MS)
    # What a stamp's jitter can add to a percentile of differences of stamps: alone 1 ms;
    # at c=64 on 2 shared cores the burst drain and scheduling make the tail jitter vary
    # from run to run (lateness p99 2-5 ms here), so the bound is this run's own spread.
    tol = 1 * MS if concurrency == 1 else 1 * MS + (late_p99 - late_p50)
    # TTFT: at c=64 the first tokens all come in one burst (the streams start together).
    assert lv["ttft_s"]["p50"] == pytest.approx(np.median(true_ttft), abs=tol)
    if concurrency == 1:  # alone, the request's own transit is small: TTFT is the script's
        assert np.median(transit) < 2 * MS
        assert lv["ttft_s"]["p50"] == pytest.approx(ttft, abs=3 * MS)
    assert lv["tpot_s"]["p50"] == pytest.approx(np.median(true_tpot), abs=1 * MS)
    # 49 gaps: every 10th is 3x the TPOT; mean gap = (45 x 20 + 4 x 60) / 49 ms.
    assert lv["tpot_s"]["p50"] == pytest.approx((45 * 20 + 4 * 60) / 49 * MS, abs=1 * MS)
    # A gap is the difference of two stamps, so it carries the difference of their
    # lateness. The median gap sits inside the 20 ms cluster and holds 1 ms at any load;
    # p90 sits on its upper edge, where the jitter lands directly.
    for p, q, t in (("p50", 50, 1 * MS), ("p90", 90, tol), ("p99", 99, tol)):
        assert lv["gap_s"][p] == pytest.approx(np.percentile(true_gaps, q), abs=t), p
    # The script's slow gap, the server's own scheduling jitter included (a Python server
    # writing 64 streams on 2 shared cores was 2.9 ms late at p99 here).
    jitter = 2 * MS if concurrency == 1 else 4 * MS
    assert lv["gap_s"]["p99"] == pytest.approx(3 * tpot, abs=jitter + tol - 1 * MS)


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
    assert lv["gap_s"]["n"] == 3 * 18  # first event's second token has no gap of its own
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
        assert key in s["levels"][0]["gap_s"]
    # Unique prompts with exact token counts (the fake counts one token per word).
    assert len({r.prompt_sha1 for r in recs}) == len(recs)
    assert all(r.prompt_tokens == 16 for r in recs)


def test_rate_mode_records_queueing(fake_url: str, tmp_path: Path) -> None:
    cfg = BenchConfig(
        url=fake_url,
        model="fake",
        levels=[Level("rate", 20.0)],
        requests_per_level=10,
        prompt_tokens=8,
        output_tokens=5,
        out_dir=tmp_path,
    )
    res = asyncio.run(run_benchmark(cfg))
    lv = res.summary.to_json()["levels"][0]
    assert lv["rate_per_s"] == 20.0 and lv["requests_ok"] == 10
    # No connection cap: nothing waits in the client (serialised sends would wait ~1 s);
    # the bound leaves room for one scheduling hiccup on a shared machine.
    assert lv["queue_delay_s"]["max"] is not None and lv["queue_delay_s"]["max"] < 0.2


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
    assert 0 < lv["mbu"] < 1
    # A floor that says the fake is impossibly fast: 100 GB per step.
    fast = Floor(ModelCost.stated(100e9), with_overrides(STATED, 1e12, 1e15))
    res = bench(fake_url, tmp_path / "b", n=3, out_tokens=20, floor=fast)
    assert "above_ceiling" in codes(res)


def test_rate_mode_client_queueing_is_queue_delay_not_ttft(tmp_path: Path) -> None:
    # 2 connections, ~0.5 s per request, 20 arrivals/s: most requests must wait in the
    # client. That wait is queue delay; TTFT stays the server's 30 ms.
    with fake_server(ttft=0.03, tpot=0.05, slow_every=0) as url:
        cfg = BenchConfig(
            url=url,
            model="fake",
            levels=[Level("rate", 20.0)],
            requests_per_level=8,
            warmup=0,
            prompt_tokens=4,
            output_tokens=10,
            max_connections=2,
            out_dir=tmp_path,
        )
        res = event_loop_runner()(run_benchmark(cfg))
    lv = res.summary.to_json()["levels"][0]
    assert lv["requests_ok"] == 8
    assert lv["queue_delay_s"]["max"] > 0.5
    assert lv["ttft_s"]["p50"] == pytest.approx(0.03, abs=0.01)
    # Had the wait for a connection leaked into TTFT, some TTFT would exceed 0.5 s. The
    # bound leaves room for one scheduling hiccup on a shared machine (66 ms seen in CI).
    assert lv["ttft_s"]["max"] < 0.25
