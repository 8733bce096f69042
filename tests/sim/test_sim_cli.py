"""`inferlab simulate` and `inferlab plan` from the command line, and their bad input."""

from __future__ import annotations

import json
from pathlib import Path

from tests.clirun import RunCli

SWEEP_DIR = Path(__file__).parents[1] / "data"


def test_simulate_writes_bench_schema(run_cli: RunCli, tmp_path: Path) -> None:
    code, out, err = run_cli(
        "simulate",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "--policy",
        "continuous",
        "--users",
        "30",
        "--output-tokens",
        "100",
        "--inject-prompt",
        "8000@0.2s",
        "--chunked-prefill",
        "512",
        "--out",
        str(tmp_path),
    )
    assert code == 0, err
    assert "injected 8000-token prompt" in out
    s = json.loads((tmp_path / "summary.json").read_text())
    lv = s["levels"][0]
    for key in ("ttft_s", "tpot_s", "e2e_s", "itl_s", "stall_count", "output_tokens_per_s_total"):
        assert key in lv
    assert lv["requests_ok"] == 31 and s["utilisation"]["rows"]
    code, _, _ = run_cli("report", str(tmp_path))  # simulated runs render like measured ones
    assert code == 0 and (tmp_path / "report.html").exists()


def test_simulate_calibrated(run_cli: RunCli, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text((SWEEP_DIR / "llama_cpu_sweep_summary.json").read_text())
    code, out, err = run_cli(
        "simulate",
        "--calibrate",
        str(run),
        "--calibrate-levels",
        "c=1,c=16",
        "--users",
        "4",
        "--prompt-tokens",
        "32",
        "--output-tokens",
        "64",
        "--json",
    )
    assert code == 0, err
    assert '"step_time_model": "fitted"' in out


def test_rate_zero(run_cli: RunCli) -> None:
    code, _, err = run_cli(
        "simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--rate", "0/s"
    )
    assert code == 2 and "rate must be positive" in err


def test_kv_cache_too_small(run_cli: RunCli) -> None:
    code, _, err = run_cli(
        "simulate",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "--users",
        "1",
        "--prompt-tokens",
        "8000",
        "--kv-capacity",
        "100MB",
    )
    assert code == 2 and "cannot hold even one request" in err


def test_no_load_given(run_cli: RunCli) -> None:
    code, _, err = run_cli("simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm")
    assert code == 2 and "--users" in err


def test_plan_sizes_a_fleet(run_cli: RunCli) -> None:
    code, out, err = run_cli(
        "plan",
        "--model",
        "llama-3-70b",
        "--hardware",
        "h100-sxm",
        "--tp",
        "4",
        "--rate",
        "50/s",
        "--prompt-tokens",
        "1000",
        "--output-tokens",
        "300",
        "--slo",
        "ttft_p99=1s,tpot_p99=50ms",
        "--gpu-hour",
        "3",
        "--sim-duration",
        "20s",
        "--json",
    )
    assert code == 0, err
    d = json.loads(out)
    assert d["max_rate_per_replica_per_s"] > 1
    assert d["replicas"] == -(-50 // d["max_rate_per_replica_per_s"])
    assert d["gpus"] == 4 * d["replicas"]
    assert d["binding_constraint"] in (
        "TTFT",
        "TPOT",
        "memory (KV cache: preemptions)",
        "throughput (queue grows without bound)",
    )
    assert d["usd_per_million_output_tokens"] > 0


def test_plan_unreachable_slo(run_cli: RunCli) -> None:
    code, _, err = run_cli(
        "plan",
        "--model",
        "llama-3-70b",
        "--hardware",
        "h100-sxm",
        "--tp",
        "4",
        "--rate",
        "5/s",
        "--slo",
        "tpot_p99=1ms",
    )
    assert code == 2 and "unreachable at any rate" in err


def test_plan_bad_slo(run_cli: RunCli) -> None:
    code, _, err = run_cli(
        "plan",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "--rate",
        "5/s",
        "--slo",
        "latency=1s",
    )
    assert code == 2 and "ttft_p99=1s" in err


def test_report_measured_and_simulated_side_by_side(run_cli: RunCli, tmp_path: Path) -> None:
    measured = tmp_path / "measured"
    measured.mkdir()
    (measured / "summary.json").write_text((SWEEP_DIR / "llama_cpu_sweep_summary.json").read_text())
    simulated = tmp_path / "simulated"
    code, _, err = run_cli(
        "simulate",
        "--calibrate",
        str(measured),
        "--calibrate-levels",
        "c=1,c=16",
        "--users",
        "4",
        "--requests-per-user",
        "4",
        "--prompt-tokens",
        "32",
        "--output-tokens",
        "64",
        "--stagger",
        "0.5s",
        "--out",
        str(simulated),
    )
    assert code == 0, err
    chart = tmp_path / "both.png"
    code, out, err = run_cli("report", str(measured), str(simulated), "--compare", str(chart))
    assert code == 0, err
    assert "(measured)" in out and "(simulated)" in out
    assert chart.stat().st_size > 10_000


def test_simulate_json_prints_the_summary_alone(run_cli: RunCli) -> None:
    code, out, err = run_cli(
        "simulate",
        "--model",
        "llama-3-8b",
        "--hardware",
        "h100-sxm",
        "--users",
        "4",
        "--output-tokens",
        "20",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["levels"][0]["requests_ok"] == 4  # stdout is the JSON alone
    assert "TTFT" in err


def test_the_search_never_reports_a_concurrency_it_could_not_load(run_cli: RunCli) -> None:
    """20 requests per level keep at most 20 in flight: the search stops at c=20, says why."""
    code, out, _ = run_cli(
        "simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm",
        "--find-max-load", "concurrency", "--slo", "tpot_p50=10ms", "--requests-per-level", "20",
    )  # fmt: skip
    assert code == 0
    tried = [line.split(":")[0].strip() for line in out.splitlines() if line.startswith("  c=")]
    assert tried == ["c=1", "c=2", "c=4", "c=8", "c=16", "c=20"]
    assert "at least 20; no higher level was tried: --requests-per-level 20 keeps at most" in out
    code, _, err = run_cli(
        "simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--concurrency", "32",
        "--find-max-load", "concurrency", "--slo", "tpot_p50=10ms", "--requests-per-level", "20",
    )  # fmt: skip
    assert code == 2 and "starts at 32 streams" in err and "Traceback" not in err


def test_simulate_help_says_one_level(run_cli: RunCli) -> None:
    code, out, _ = run_cli("simulate", "--help")
    assert code == 0 and "--concurrency N" in out and "--concurrency LIST" not in out
    assert "START,HIGHEST" in out


def test_plan_explain_reads_as_lines(run_cli: RunCli) -> None:
    code, out, _ = run_cli(
        "plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--rate", "50/s",
        "--slo", "ttft_p99=500ms,tpot_p99=30ms", "--sim-duration", "10s", "--explain",
    )  # fmt: skip
    assert code == 0
    assert "{" not in out and "None" not in out
    assert "  step time model: roofline" in out and "  overhead: 0 ms" in out
    assert "prefill chunk whole prompts, KV capacity 487,819 tokens" in out
    assert len([x for x in out.splitlines() if x.endswith("meets the SLO")]) >= 5
    # 8 rates simulated by default: the bracket 32-64 req/s was left wide, and plan says so
    assert "rates between 32 and 64 req/s were not simulated within --search-max-levels 8" in out
