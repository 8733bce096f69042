"""SGLang 0.5.23's `bench_serving --output-file --output-details` lines (tests/fixtures/peers/
sglang-0.5.23, written against the bundled llama-server): recomputed from the per-request
values, equal to what SGLang printed; its first request, served from llama-server's slot
cache after SGLang's warm-up with the same prompt, is caught by the prefill floor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.peers.detect import read_peer
from inferlab.peers.judge import batch_of, summarise
from tests.clirun import RunJson
from tests.peers.printed import vllm_table

HERE = Path(__file__).parents[1] / "fixtures" / "peers" / "sglang-0.5.23"
FLOOR = ("--weight-bytes", "100MB", "--params", "135M", "--bandwidth", "20GB/s")


@pytest.mark.parametrize("run", ["c1", "c4"])
def test_reads_what_sglang_printed(run: str) -> None:
    printed = vllm_table(HERE / run / "stdout.txt")  # the same table layout as vLLM's
    peer = read_peer(HERE / run / "bench_serving.jsonl")
    assert peer.tool == "sglang bench_serving"
    (lv,) = peer.levels
    s = lv.summary
    assert s.label == f"c={printed['Max request concurrency']:g}"
    assert s.source is not None and s.source.basis == "per_request"
    assert s.requests_ok == printed["Successful requests"]
    for stats, name in ((s.ttft_s, "TTFT"), (s.gap_s, "ITL")):
        assert stats.p50 is not None and round(stats.p50 * 1e3, 2) == printed[f"Median {name} (ms)"]
        assert round((stats.p99 or 0) * 1e3, 2) == printed[f"P99 {name} (ms)"]
    # SGLang's TPOT runs to the stream's close; the gaps in the file stop at the last token
    assert s.tpot_s.p50 == pytest.approx(printed["Median TPOT (ms)"] / 1e3, rel=2e-3)
    assert s.tpot_s.p50 <= printed["Median TPOT (ms)"] / 1e3 + 5e-6
    assert round(s.rest["as_written"]["tpot_p50_s"] * 1e3, 2) == printed["Median TPOT (ms)"]
    assert round(s.output_tokens_per_s_total, 2) == printed["Output token throughput (tok/s)"]
    batch, where = batch_of(lv)
    assert where == "the stated concurrency"


def test_cache_served_first_request_is_below_the_prefill_floor(run_json: RunJson) -> None:
    """c1: ttfts[0] 27.9 ms, the server evaluated 1 of its prompt tokens (its log); the
    others took 201-370 ms. 33 tokens x 2 x 135M params at 120 GFLOP/s: 74 ms."""
    path = HERE / "c1" / "bench_serving.jsonl"
    ttfts = json.loads(path.read_text())["ttfts"]
    s = summarise(read_peer(path))  # no floor: no verdict
    assert "ttft_below_prefill_floor" not in [w.code for w in s.warnings]
    out = run_json("report", str(path), *FLOOR, "--flops", "120GFLOPS")
    (w,) = [w for w in out["warnings"] if w["code"] == "ttft_below_prefill_floor"]
    assert w["severity"] == "error"
    assert w["message"].startswith(
        f"1 of 8 requests had a TTFT (fastest {min(ttfts) * 1e3:.4g} ms)"
    )
    assert "the prompts came from a cache" in w["message"]


def test_no_send_times_no_invented_window(run_json: RunJson) -> None:
    """Without send times the window is SGLang's duration, and goodput is over it."""
    path = HERE / "c4" / "bench_serving.jsonl"
    line = json.loads(path.read_text())
    out = run_json("report", str(path), "--slo", "ttft=2s")
    (lv,) = out["levels"]
    assert lv["window_s"] == line["duration"]
    good = sum(1 for t in line["ttfts"] if t <= 2.0)
    assert lv["slo"]["requests_good"] == good
    assert lv["slo"]["goodput_requests_per_s"] == pytest.approx(good / line["duration"])
