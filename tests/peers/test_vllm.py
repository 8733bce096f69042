"""vLLM 0.32.0's `bench serve --save-result` files (tests/fixtures/peers/vllm-0.32.0, written
against the bundled llama-server), with and without --save-detailed: TTFT, TPOT and ITL p50,
output tok/s and the request counts read back as vLLM printed them."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.peers.detect import read_peer
from inferlab.peers.judge import summarise
from tests.clirun import RunJson
from tests.peers.printed import vllm_table

HERE = Path(__file__).parents[1] / "fixtures" / "peers" / "vllm-0.32.0"
RUNS = ("c1", "c4", "c1-detailed", "c4-detailed")


@pytest.mark.parametrize("run", RUNS)
def test_reads_what_vllm_printed(run: str) -> None:
    printed = vllm_table(HERE / run / "stdout.txt")
    (lv,) = read_peer(HERE / run / "result.json").levels
    s = lv.summary
    assert s.label == f"c={printed['Maximum request concurrency']:g}"
    assert s.source is not None
    assert s.source.basis == ("per_request" if "detailed" in run else "aggregates")
    assert (s.requests_ok, s.requests_failed) == (
        printed["Successful requests"],
        printed["Failed requests"],
    )
    for stats, name in ((s.ttft_s, "TTFT"), (s.tpot_s, "TPOT"), (s.gap_s, "ITL")):
        assert stats.p50 is not None and round(stats.p50 * 1e3, 2) == printed[f"Median {name} (ms)"]
    assert round(s.output_tokens_per_s_total, 2) == printed["Output token throughput (tok/s)"]
    assert s.output_tokens == printed["Total generated tokens"]


def test_detailed_p90_and_p99_as_printed() -> None:
    """Recomputed with numpy's percentiles, as vLLM computes its own."""
    printed = vllm_table(HERE / "c4-detailed" / "stdout.txt")
    s = read_peer(HERE / "c4-detailed" / "result.json").levels[0].summary
    for stats, name in ((s.ttft_s, "TTFT"), (s.tpot_s, "TPOT"), (s.gap_s, "ITL")):
        assert round((stats.p90 or 0) * 1e3, 2) == printed[f"P90 {name} (ms)"]
        assert round((stats.p99 or 0) * 1e3, 2) == printed[f"P99 {name} (ms)"]


def test_the_failed_request_is_one_line() -> None:
    s = summarise(read_peer(HERE / "c4-detailed" / "result.json"))
    (w,) = [w for w in s.warnings if w.code == "requests_failed"]
    assert w.message.endswith("ServerDisconnectedError: Server disconnected")
    assert "\n" not in w.message


def test_retokenized_lengths_are_named() -> None:
    s = summarise(read_peer(HERE / "c4-detailed" / "result.json"))
    (w,) = [w for w in s.warnings if w.code == "output_lengths_vary"]
    assert "from 60 to 64 tokens" in w.message and "re-tokenizing" in w.message
    assert "token_count_mismatch" not in [w.code for w in s.warnings]


def test_mbu_with_the_floor(run_json: RunJson) -> None:
    out = run_json(
        "report",
        str(HERE / "c1-detailed" / "result.json"),
        *("--weight-bytes", "100MB", "--bandwidth", "10GB/s", "--flops", "100GFLOPS"),
    )
    (lv,) = out["levels"]
    assert lv["floor_batch"] == 1 and lv["mbu_basis"] == "client_tpot"
    assert lv["mbu"] == pytest.approx(lv["bytes_per_step"] / lv["tpot_s"]["p50"] / 10e9)


def test_append_result_is_one_level_a_line(tmp_path: Path) -> None:
    """`--append-result` appends each run's JSON as a line: two real runs, two levels."""
    lines = [(HERE / r / "result.json").read_text().strip() for r in ("c1", "c4")]
    path = tmp_path / "appended.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert [lv.summary.label for lv in read_peer(path).levels] == ["c=1", "c=4"]


def test_sglang_lines_read_by_their_keys(tmp_path: Path) -> None:
    """SGLang bench_serving's --output-file line (keys as its source writes them; no
    SGLang-written file is committed): aggregates, e2e named `e2e_latency`."""
    import json

    line = {
        "backend": "sglang",
        "request_rate": 2.0,
        "max_concurrency": None,
        "duration": 10.0,
        "completed": 20,
        "total_input_tokens": 640,
        "total_output_tokens": 1280,
        "total_output_tokens_retokenized": 1279,
        "output_throughput": 128.0,
        "median_e2e_latency_ms": 900.0,
        "median_ttft_ms": 50.0,
        "p99_ttft_ms": 80.0,
        "median_tpot_ms": 13.0,
        "median_itl_ms": 12.5,
    }
    path = tmp_path / "sglang.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps({**line, "request_rate": 4.0}) + "\n")
    run = read_peer(path)
    assert run.tool == "sglang bench_serving"
    a, b = (lv.summary for lv in run.levels)
    assert (a.label, b.label) == ("rate=2/s", "rate=4/s")
    assert a.ttft_s.p50 == pytest.approx(0.05) and a.e2e_s.p50 == pytest.approx(0.9)
    assert a.tpot_s.p50 == pytest.approx(0.013) and a.output_tokens_per_s_total == 128.0
    assert run.levels[0].prompt_tokens_mean == 32


def test_json_from_the_real_process_is_strict(tmp_path: Path) -> None:
    """`report FILE --json` as a process: one strict JSON object on stdout, nothing else,
    nothing written."""
    import json
    import subprocess
    import sys

    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "inferlab.cli",
            "report",
            str(HERE / "c4-detailed" / "result.json"),
            "--json",
            "--weight-bytes",
            "100MB",
            "--bandwidth",
            "10GB/s",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout, parse_constant=lambda c: pytest.fail(f"non-strict {c}"))
    assert doc["levels"][0]["source"]["basis"] == "per_request"
    assert list(tmp_path.iterdir()) == []
