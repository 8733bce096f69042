"""A peer's per-request values go through bench's own summariser, SLO and checks: the
numbers are checked against counts and medians worked out by hand here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.peers.detect import read_peer
from inferlab.peers.judge import batch_of, mean_in_flight, summarise
from inferlab.physics.floor import Floor
from inferlab.slo.grammar import parse_slo
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import STATED, with_overrides
from tests.clirun import RunCli, RunJson

# Four requests, sent 1 s apart, open loop at 1/s; TTFT 0.1, 0.2, 0.3, 0.4 s; the last
# two emit 3 tokens 50 ms apart, the first two 3 tokens 10 ms apart; the fourth failed.
VLLM_DETAILED = {
    "backend": "openai",
    "model_id": "m",
    "request_rate": 1.0,
    "max_concurrency": None,
    "completed": 3,
    "failed": 1,
    "duration": 4.0,
    "total_output_tokens": 9,
    "median_ttft_ms": 200.0,
    "ttfts": [0.1, 0.2, 0.3, 0.0],
    "itls": [[0.01, 0.01], [0.01, 0.01], [0.05, 0.05], []],
    "start_times": [100.0, 101.0, 102.0, 103.0],
    "input_lens": [32, 32, 32, 32],
    "output_lens": [3, 3, 3, 0],
    "errors": ["", "", "", "HTTP 500"],
}


def _file(tmp_path: Path, doc: object, name: str = "vllm.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def test_per_request_values_are_recomputed(tmp_path: Path) -> None:
    run = read_peer(_file(tmp_path, VLLM_DETAILED))
    (lv,) = run.levels
    s = lv.summary
    assert s.label == "rate=1/s" and s.rate_per_s == 1.0
    assert s.source is not None and s.source.basis == "per_request"
    assert (s.requests_ok, s.requests_failed) == (3, 1)
    assert s.ttft_s.p50 == pytest.approx(0.2)
    assert s.tpot_s.p50 == pytest.approx(0.01)  # (E2E - TTFT) / (3 - 1) per request
    assert s.gap_s.n == 6 and s.gap_s.max == pytest.approx(0.05)
    assert s.output_tokens_per_s_total == pytest.approx(9 / 4.0)  # the tool's own window


def test_slo_attainment_is_a_count_over_the_file(tmp_path: Path) -> None:
    run = read_peer(_file(tmp_path, VLLM_DETAILED))
    summary = summarise(run, slo=parse_slo("ttft=250ms,tpot=20ms"))
    slo = summary.levels[0].slo
    assert slo is not None
    # requests 1 and 2 meet both; 3 misses TTFT and TPOT; 4 failed: 2 of 4
    assert (slo.requests, slo.requests_good) == (4, 2)
    assert slo.attainment == pytest.approx(0.5)


def test_mean_in_flight_from_start_and_end(tmp_path: Path) -> None:
    (lv,) = read_peer(_file(tmp_path, VLLM_DETAILED)).levels
    # three ok requests busy 0.12, 0.22, 0.4 s over 100.0 -> 102.4 s
    assert mean_in_flight(lv.records) == pytest.approx((0.12 + 0.22 + 0.4) / 2.4)
    batch, where = batch_of(lv)
    assert batch == pytest.approx(0.74 / 2.4) and "in flight" in where


def _floor(flops: float) -> Floor:
    cost = ModelCost.stated(100e6, 1000.0, params=100e6)
    return Floor(cost, with_overrides(STATED, 10e9, flops, None))


def test_ttft_below_the_prefill_compute_floor_is_named(tmp_path: Path) -> None:
    run = read_peer(_file(tmp_path, VLLM_DETAILED))
    # 32 tokens x 2 x 100M params = 6.4 GFLOP: 0.64 s at 10 GFLOP/s, above every TTFT
    slow = summarise(run, _floor(10e9))
    (w,) = [w for w in slow.warnings if w.code == "ttft_below_prefill_floor"]
    assert w.message.startswith("3 of 3 requests had a TTFT (fastest 100 ms) below the 640 ms")
    one = summarise(run, _floor(50e9))  # 128 ms: only the 100 ms TTFT is below it
    (w,) = [w for w in one.warnings if w.code == "ttft_below_prefill_floor"]
    assert w.message.startswith("1 of 3 requests")
    fast = summarise(run, _floor(1e12))  # 6.4 ms: every TTFT is above it
    assert "ttft_below_prefill_floor" not in [w.code for w in fast.warnings]


def test_mbu_and_times_above_the_floor(tmp_path: Path) -> None:
    s = summarise(read_peer(_file(tmp_path, VLLM_DETAILED)), _floor(1e12)).levels[0]
    c = s.comparison
    assert c is not None and c.floor_batch == 1 and c.mbu_basis == "client_tpot"
    assert c.measured_over_floor == pytest.approx(0.01 / c.predicted_step_time_s)
    assert c.mbu == pytest.approx(c.predicted_step_time_s / 0.01, rel=0.01)


def test_lengths_not_forced_and_failures_are_named(tmp_path: Path) -> None:
    doc = {**VLLM_DETAILED, "output_lens": [3, 2, 3, 0]}
    codes = {w.code for w in summarise(read_peer(_file(tmp_path, doc))).warnings}
    assert {"output_lengths_vary", "requests_failed", "few_requests"} <= codes


def test_aggregates_only_judged_on_percentiles(tmp_path: Path, run_json: RunJson) -> None:
    keep = {k: v for k, v in VLLM_DETAILED.items() if k not in ("ttfts", "itls", "errors")}
    doc = {**keep, "p90_ttft_ms": 290.0, "median_tpot_ms": 10.0}
    out = run_json("report", str(_file(tmp_path, doc)), "--slo", "ttft=250ms,tpot_p50=20ms")
    (lv,) = out["levels"]
    assert lv["source"]["basis"] == "aggregates"
    assert lv["ttft_s"]["p50"] == pytest.approx(0.2) and lv["itl_s"]["p50"] is None
    judged = {o["objective"]: o for o in lv["slo_on_percentiles"]}
    assert judged["ttft"]["judged_on"] == "p90" and judged["ttft"]["holds"] is False
    assert judged["tpot_p50"]["holds"] is True


def test_report_a_b_without_common_level_exits_2(tmp_path: Path, run_cli: RunCli) -> None:
    a = _file(tmp_path, VLLM_DETAILED, "a.json")
    b = _file(tmp_path, {**VLLM_DETAILED, "request_rate": 2.0}, "b.json")
    code, out, err = run_cli("report", str(a), str(b))
    assert code == 2 and "rate=1/s" in err and "rate=2/s" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


def test_report_a_b_writes_beside_the_runs(tmp_path: Path, run_cli: RunCli) -> None:
    a = _file(tmp_path, VLLM_DETAILED, "a.json")
    b = _file(tmp_path, {**VLLM_DETAILED, "ttfts": [0.2, 0.2, 0.3, 0.0]}, "b.json")
    code, out, _ = run_cli("report", str(a), str(b), "--out", str(tmp_path / "cmp"))
    assert code == 0 and "TTFT p50" in out
    assert sorted(p.name for p in (tmp_path / "cmp").iterdir()) == ["compare.html", "compare.png"]


def test_json_reads_back_as_the_one_schema(tmp_path: Path, run_json: RunJson) -> None:
    from inferlab.summary import RunSummary

    out = run_json(
        "report",
        str(_file(tmp_path, VLLM_DETAILED)),
        "--bandwidth",
        "10GB/s",
        "--weight-bytes",
        "100MB",
        "--flops",
        "1TFLOPS",
    )
    back = RunSummary.from_json(out)
    src = back.levels[0].source
    assert src is not None and (src.tool, src.basis) == ("vllm bench serve", "per_request")
    assert src.file.endswith("vllm.json") and src.version is None  # vLLM writes none
    assert back.levels[0].comparison is not None and back.floor is not None


def test_report_two_files_writes_a_folder_beside_them(
    tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --out and no run folder: a new folder beside the first file, never the cwd."""
    files = tmp_path / "files"
    files.mkdir()
    a = _file(files, VLLM_DETAILED, "a.json")
    b = _file(files, {**VLLM_DETAILED, "ttfts": [0.2, 0.2, 0.3, 0.0]}, "b.json")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    code, _, err = run_cli("report", str(a), str(b))
    assert code == 0, err
    assert list(cwd.iterdir()) == []
    assert sorted(p.name for p in (files / "compare-a-vs-b").iterdir()) == [
        "compare.html",
        "compare.png",
    ]
