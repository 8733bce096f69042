"""guidellm 0.8.1's own reports (tests/fixtures/peers/guidellm-0.8.1, two benchmarks a file,
written against the bundled llama-server). Every request is listed, so the levels are
recomputed; guidellm's own figures are kept beside them and equal what it printed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from inferlab.peers.detect import read_peer
from inferlab.peers.judge import summarise
from tests.peers.printed import guidellm_latency

HERE = Path(__file__).parents[1] / "fixtures" / "peers" / "guidellm-0.8.1"
CASES = {
    "concurrent-1-4": {"concurrent@1": "c=1", "concurrent@4": "c=4"},
    "constant-0.5-1": {"constant@0.50": "rate=0.5/s", "constant@1.00": "rate=1/s"},
}


@pytest.mark.parametrize("run", sorted(CASES))
def test_levels_follow_the_strategy_and_keep_what_guidellm_printed(run: str) -> None:
    printed = guidellm_latency(HERE / run / "stdout.txt")
    peer = read_peer(HERE / run / "benchmarks.json")
    assert peer.tool == "guidellm" and peer.version == "0.8.1"
    by_label = {lv.summary.label: lv.summary for lv in peer.levels}
    for strategy, label in CASES[run].items():
        s, p = by_label[label], printed[strategy]
        w = s.rest["as_written"]
        assert round(w["ttft_p50_s"] * 1e3, 1) == p["ttft_mdn"]
        assert round(w["tpot_p50_s"] * 1e3, 1) == p["itl_mdn"]  # guidellm's ITL: our TPOT
        assert round(w["output_tokens_per_s"], 1) == p["output_tok_s"]
        assert round(s.output_tokens_per_s_total, 1) == p["output_tok_s"]  # its own window
        assert s.requests_ok == p["completed"]


def test_recomputed_from_each_request_by_numpy_as_bench_does() -> None:
    path = HERE / "concurrent-1-4" / "benchmarks.json"
    raw = json.loads(path.read_text())["benchmarks"][1]["requests"]["successful"]
    s = read_peer(path).levels[1].summary
    assert s.source is not None and s.source.basis == "per_request"
    assert s.ttft_s.p50 == pytest.approx(
        np.median([r["time_to_first_token_ms"] for r in raw]) / 1e3
    )
    assert s.tpot_s.p50 == pytest.approx(
        np.median([r["inter_token_latency_ms"] for r in raw]) / 1e3
    )
    assert s.gap_s.n == 0  # guidellm keeps only first and last token times: no gaps


def test_the_yaml_reads_as_the_json() -> None:
    a = read_peer(HERE / "concurrent-1-4" / "benchmarks.json")
    b = read_peer(HERE / "concurrent-1-4" / "benchmarks.yaml")
    for x, y in zip(a.levels, b.levels, strict=True):
        assert x.summary.ttft_s == y.summary.ttft_s and x.summary.tpot_s == y.summary.tpot_s


def test_the_shared_prefix_guidellm_sends_is_named() -> None:
    """guidellm's synthetic prompts start alike; llama-server reused 2 cached tokens for 8 of
    each 12 requests, and guidellm recorded it (input_metrics.cached_tokens)."""
    s = summarise(read_peer(HERE / "concurrent-1-4" / "benchmarks.json"))
    hits = [w for w in s.warnings if w.code == "prefix_cache_hit"]
    assert [w.level for w in hits] == ["c=1", "c=4"]
    assert all(w.message.startswith("8 requests reused cached prompt tokens") for w in hits)


def test_the_open_loop_batch_is_the_mean_in_flight() -> None:
    from inferlab.peers.judge import batch_of

    lv = read_peer(HERE / "constant-0.5-1" / "benchmarks.json").levels[1]
    batch, where = batch_of(lv)
    assert "in flight" in where
    assert batch is not None and 4.0 < batch < 7.0  # guidellm measured 5.9 (its mean)


def test_without_the_request_list_the_tool_figures_are_taken(tmp_path: Path) -> None:
    """guidellm may keep a sample of the requests (--sample-size): then its own
    distributions are taken as written."""
    doc = json.loads((HERE / "concurrent-1-4" / "benchmarks.json").read_text())
    for b in doc["benchmarks"]:
        b["requests"]["successful"] = b["requests"]["successful"][:3]
    path = tmp_path / "benchmarks.json"
    path.write_text(json.dumps(doc))
    printed = guidellm_latency(HERE / "concurrent-1-4" / "stdout.txt")["concurrent@4"]
    s = read_peer(path).levels[1].summary
    assert s.source is not None and s.source.basis == "aggregates"
    assert s.ttft_s.p50 is not None and s.tpot_s.p50 is not None
    assert round(s.ttft_s.p50 * 1e3, 1) == printed["ttft_mdn"]
    assert round(s.tpot_s.p50 * 1e3, 1) == printed["itl_mdn"]
    assert round(s.output_tokens_per_s_total, 1) == printed["output_tok_s"]
    assert (s.requests_ok, s.output_tokens) == (12, 768)
