"""AIPerf 0.13.0's own files (tests/fixtures/peers/aiperf-0.13.0, written against the bundled
llama-server): each of the three formats reads back with the TTFT p50, ITL p50 (AIPerf's
per-request ITL, inferlab's TPOT), output tok/s and request count that AIPerf printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.peers.detect import read_peer
from inferlab.peers.judge import summarise
from inferlab.slo.grammar import parse_slo
from tests.clirun import RunCli, RunJson
from tests.peers.printed import aiperf_table

HERE = Path(__file__).parents[1] / "fixtures" / "peers" / "aiperf-0.13.0"
FILES = ("profile_export_aiperf.json", "profile_export_aiperf.csv", "profile_export.jsonl")
RUNS = ("c1", "c4", "c1-one-failed")
GGUF_FLAGS = ("--weight-bytes", "100MB", "--bandwidth", "10GB/s", "--flops", "100GFLOPS")


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("name", FILES)
def test_reads_what_aiperf_printed(run: str, name: str) -> None:
    printed = aiperf_table(HERE / run / "stdout.txt")
    peer = read_peer(HERE / run / name)
    assert peer.tool == "aiperf" and peer.version == "0.13.0"
    (lv,) = peer.levels
    s = lv.summary
    assert s.label == ("c=4" if run == "c4" else "c=1")
    assert s.ttft_s.p50 is not None and s.tpot_s.p50 is not None
    assert round(s.ttft_s.p50 * 1e3, 2) == printed["Time to First Token (ms)"]["p50"]
    assert round(s.tpot_s.p50 * 1e3, 2) == printed["Inter Token Latency (ms)"]["p50"]
    tok_s = printed["Output Token Throughput (tokens/sec)"]["avg"]
    if name.endswith(".jsonl"):  # the server's token count, where AIPerf retokenized
        tok_s *= s.output_tokens / _aiperf_output_tokens(HERE / run / name)
    assert round(s.output_tokens_per_s_total, 2) == round(tok_s, 2)
    assert s.requests_ok == printed["Request Count (requests)"]["avg"]
    basis = "per_request" if name.endswith(".jsonl") else "aggregates"
    assert s.source is not None and s.source.basis == basis


def _aiperf_output_tokens(jsonl: Path) -> int:
    import json

    rows = [json.loads(x) for x in jsonl.read_text().splitlines() if x.strip()]
    return sum(r["metrics"]["output_sequence_length"]["value"] for r in rows if not r.get("error"))


def test_aiperf_retokenized_count_is_named() -> None:
    """c=4: one request's text retokenized by AIPerf to 66 tokens; the server said 64."""
    s = summarise(read_peer(HERE / "c4" / FILES[2]))
    assert s.levels[0].output_tokens == 1024
    (note,) = [w.message for w in s.warnings if w.code == "tool_count_differs"]
    assert "AIPerf counted 1026" in note and "server reported 1024" in note
    assert "output_lengths_vary" not in [w.code for w in s.warnings]


def test_the_failed_request_is_counted_and_named() -> None:
    for name in FILES[0::2]:  # the JSON names the error; the jsonl holds the failed record
        s = summarise(read_peer(HERE / "c1-one-failed" / name))
        lv = s.levels[0]
        assert (lv.requests_ok, lv.requests_failed) == (7, 1)
        failed = [w for w in s.warnings if w.code == "requests_failed"]
        assert failed and "ServerDisconnectedError" in failed[0].message


def test_slo_attainment_is_a_count_over_the_records() -> None:
    import json

    path = HERE / "c4" / "profile_export.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    ttft_ms = [r["metrics"]["time_to_first_token"]["value"] for r in lines]
    ranked = sorted(ttft_ms)
    limit_ms = (ranked[7] + ranked[8]) / 2  # half meet it, none sits on the limit
    want = sum(1 for t in ttft_ms if t <= limit_ms)
    s = summarise(read_peer(path), slo=parse_slo(f"ttft={limit_ms}ms"))
    slo = s.levels[0].slo
    assert slo is not None and slo.requests == len(lines)
    assert slo.requests_good == want


def test_mbu_is_stated_with_its_basis(run_json: RunJson) -> None:
    out = run_json("report", str(HERE / "c4" / FILES[0]), *GGUF_FLAGS)
    (lv,) = out["levels"]
    assert lv["floor_batch"] == 4  # the stated concurrency
    assert lv["mbu_basis"] == "client_tpot"
    achieved = lv["bytes_per_step"] / lv["tpot_s"]["p50"]  # bytes a step reads / its time
    assert lv["mbu"] == pytest.approx(achieved / 10e9)
    assert lv["measured_over_floor"] == pytest.approx(
        lv["tpot_s"]["p50"] / lv["predicted_step_time_s"]
    )


def test_report_prints_the_reading(run_cli: RunCli) -> None:
    code, out, err = run_cli("report", str(HERE / "c1" / FILES[2]), *GGUF_FLAGS)
    assert code == 0, err
    assert "Read as aiperf 0.13.0: recomputed here from its per-request values" in out
    assert "x the floor, MBU" in out and "basis: client_tpot" in out


def test_beside_an_inferlab_run_of_the_same_shape(tmp_path: Path, run_cli: RunCli) -> None:
    """AIPerf at c=4 (32-token prompts, 64 out) beside inferlab's own c=1..16 sweep of the
    same shape: side by side with the difference, and the HTML in the run's folder."""
    import shutil

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(
        Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json", run / "summary.json"
    )
    aiperf = HERE / "c4" / FILES[0]
    code, out, err = run_cli("report", str(aiperf), str(run))
    assert code == 0, err
    diff = out[out.index("  c=4     requests ok") :]  # the one level both ran
    row = next(line for line in diff.splitlines() if "TTFT p50 ms" in line)
    assert row.split()[3:5] == ["1565", "681.4"]  # AIPerf's printed 1,565.30; inferlab's
    assert "only in B (run (measured)): c=1, c=2, c=8, c=16" in out
    html = (run / "compare.html").read_text(encoding="utf-8")
    assert "profile_export_aiperf.json (aiperf)" in html and "TTFT p50" in html
    assert (run / "compare.png").stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # nothing loose elsewhere


def test_aggregates_judged_on_the_percentile_at_min_attainment(run_json: RunJson) -> None:
    import json

    path = HERE / "c4" / FILES[0]
    ttft = json.loads(path.read_text())["time_to_first_token"]
    out = run_json(
        "report", str(path), "--slo", "ttft=1.6s,ttft_p50=1.6s", "--min-attainment", "0.95"
    )
    judged = {o["objective"]: o for o in out["levels"][0]["slo_on_percentiles"]}
    assert judged["ttft"]["judged_on"] == "p95"  # 95 % must meet it: the file's p95 says
    assert judged["ttft"]["value_s"] == pytest.approx(ttft["p95"] / 1e3)
    assert judged["ttft"]["holds"] is (ttft["p95"] <= 1600)
    assert judged["ttft_p50"]["holds"] is (ttft["p50"] <= 1600)


def test_the_artifact_folder_stands_for_its_jsonl(run_cli: RunCli) -> None:
    code, out, err = run_cli("report", str(HERE / "c4"))
    assert code == 0, err
    assert "profile_export.jsonl (aiperf)" in out and "recomputed here" in out


def test_the_csv_counts_the_failure_and_skips_error_adjusted_rows() -> None:
    """The CSV also holds "Time to First Token (error-adjusted) (ms)": not the metric."""
    lv = read_peer(HERE / "c1-one-failed" / FILES[1]).levels[0].summary
    assert (lv.requests_ok, lv.requests_failed) == (7, 1)
    assert lv.ttft_s.p50 == pytest.approx(0.40875, abs=1e-5)  # not the adjusted 419.25
