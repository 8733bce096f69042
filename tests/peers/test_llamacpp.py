"""llama.cpp's engine-alone output (the real files in tests/engines/fixtures) read as a
baseline: the step time and prefill as the tools measured them, one level per batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.peers.detect import read_peer

FIX = Path(__file__).parents[1] / "engines" / "fixtures"


def test_batched_bench_one_level_per_batch() -> None:
    path = FIX / "batched_bench_1-4_pp32_tg32_t1.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    run = read_peer(path)
    assert run.tool == "llama-batched-bench"
    assert [lv.summary.concurrency for lv in run.levels] == [float(r["pl"]) for r in rows]
    for lv, r in zip(run.levels, rows, strict=True):
        s = lv.summary
        assert s.ttft_s.p50 == pytest.approx(r["t_pp"])
        assert s.tpot_s.p50 == pytest.approx(r["t_tg"] / r["tg"])
        assert s.output_tokens_per_s_total == pytest.approx(r["speed_tg"])
        assert s.source is not None and s.source.basis == "aggregates"


def test_llama_bench_generation_with_its_prefill() -> None:
    path = FIX / "llama_bench_pp32_tg128_r3_t1.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    pp = next(r for r in rows if r["n_gen"] == 0)
    tg = next(r for r in rows if r["n_prompt"] == 0)
    (lv,) = read_peer(path).levels
    assert lv.summary.label == "B=1 tg128"
    assert lv.summary.ttft_s.p50 == pytest.approx(pp["avg_ns"] * 1e-9)
    assert lv.summary.tpot_s.p50 == pytest.approx(tg["avg_ns"] * 1e-9 / 128)
    assert lv.summary.output_tokens_per_s_total == pytest.approx(tg["avg_ts"], rel=1e-3)


def test_llama_bench_json_array_reads_as_its_jsonl(tmp_path: Path) -> None:
    """`-o json` writes one array; the same rows as `-o jsonl` read the same."""
    src = FIX / "llama_bench_pp32_tg128_r3_t1.jsonl"
    rows = [json.loads(x) for x in src.read_text().splitlines() if x.strip()]
    arr = tmp_path / "bench.json"
    arr.write_text(json.dumps(rows, indent=2))
    a, b = read_peer(src).levels[0].summary, read_peer(arr).levels[0].summary
    assert (a.ttft_s, a.tpot_s) == (b.ttft_s, b.tpot_s)


PEERS = Path(__file__).parents[1] / "fixtures" / "peers" / "llamacpp-11434"


@pytest.mark.parametrize(
    "name", ["llama-bench-json/llama-bench.json", "llama-bench-jsonl/llama-bench.jsonl"]
)
def test_llama_bench_as_it_printed(name: str) -> None:
    """`-o json` (one array) and `-o jsonl`: the file is what llama-bench printed."""
    text = (PEERS / name).read_text()
    rows = (
        json.loads(text)
        if name.endswith(".json")
        else [json.loads(x) for x in text.splitlines() if x.strip()]
    )
    pp = next(r for r in rows if r["n_gen"] == 0)
    tg = next(r for r in rows if r["n_prompt"] == 0)
    run = read_peer(PEERS / name)
    (lv,) = run.levels
    assert run.version == "0 (commit unknown)"
    assert lv.summary.label == "B=1 tg64"
    assert lv.summary.output_tokens_per_s_total == tg["avg_ts"]
    assert lv.summary.ttft_s.p50 == pytest.approx(pp["avg_ns"] * 1e-9)
    assert lv.prompt_tokens_mean == 32


def test_batched_bench_as_it_printed() -> None:
    path = PEERS / "batched-bench" / "batched-bench.jsonl"
    run = read_peer(path)
    assert [lv.summary.label for lv in run.levels] == ["B=1 pp32 tg64", "B=4 pp32 tg64"]
    assert [lv.summary.output_tokens_per_s_total for lv in run.levels] == [17.930557, 49.852478]
    assert [lv.summary.tpot_s.p50 for lv in run.levels] == [3.569326 / 64, 5.135151 / 64]
    assert [lv.summary.ttft_s.p50 for lv in run.levels] == [0.530282, 2.263885]
