"""`inferlab demo --quick` end to end against the real llama.cpp server, and its failure modes."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import pytest

from inferlab.bench.benchmark import BenchConfig, run_benchmark
from inferlab.demo.sweep import WatchServer
from inferlab.engines.llama_server import LlamaServer, ServerOptions
from inferlab.errors import InferlabError
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from tests.clirun import RunCli

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # real llama-server processes


def test_demo_quick_end_to_end(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERLAB_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    # Two levels and the trace slice at double speed: every step of the demo runs (probe,
    # engine alone, predictions, sweep, Poisson, trace, watch, report) on less work.
    code, stdout, err = run_cli(
        "demo", "--quick", "--concurrency", "1,2", "--trace-speed", "2", "--out", str(out)
    )
    assert code == 0, err
    for name in (
        "report.html",
        "summary.json",
        "records.jsonl",
        "llama-server.log",
        "throughput_vs_tpot.png",
        "gap_cdf.png",
        "mbu.png",
        "engine_bench.json",
        "time_split.png",
    ):
        assert (out / name).stat().st_size > 0, name
    s = json.loads((out / "summary.json").read_text())
    assert s["workload"]["settle_slots"] is True  # each level from an idle server's slot order
    labels = [lv["label"] for lv in s["levels"]]
    closed = [lv for lv in s["levels"] if lv.get("concurrency") is not None]
    assert [lv["concurrency"] for lv in closed] == [1, 2]
    assert labels[:2] == ["c=1", "c=2"] and labels[3] == "trace"
    assert labels[2].startswith("rate=") and s["levels"][2]["rate_per_s"] > 0  # the Poisson level
    _every_level_predicted_before_measured(s, stdout, (out / "profile.json").exists())
    flagged = {w["level"] for w in s["warnings"] if w["code"] == "faster_than_engine"}
    for lv in closed:
        # (no upper bound on MBU: the floor is priced at the probe's bandwidth, which a
        # loaded machine measures low)
        assert lv["mbu"] > 0
        assert lv["requests_early_stop"] == 0 and lv["requests_failed"] == 0
        # served = floor + kernels + serving, from the sweep and the engine measured alone
        e = lv["engine"]
        assert e["batch"] == lv["concurrency"] and e["batch_source"] == "measured"
        assert e["floor_s"] == lv["predicted_step_time_s"]
        assert e["served_tpot_s"] == lv["tpot_s"]["p50"] and e["engine_step_time_s"] > 0
        assert e["kernel_overhead_s"] == pytest.approx(e["engine_step_time_s"] - e["floor_s"])
        assert e["serving_overhead_s"] == pytest.approx(
            e["served_tpot_s"] - e["engine_step_time_s"]
        )
        assert e["floor_share"] + e["kernel_share"] + e["serving_share"] == pytest.approx(1)
        # served faster than the engine alone by more than its noise is flagged, and only then
        # (which way a loaded machine tips it depends on when the load fell)
        below = e["served_tpot_s"] < e["engine_step_time_s"] - e["engine_noise_s"]
        assert below == (lv["label"] in flagged), (e, flagged)
    assert s["engine_baseline"]["threads"] == s["extra"]["server_threads"]
    assert "Where the time goes at c=1" in stdout and "engine" in stdout  # the column (two rows)
    assert s["extra"]["bandwidth_basis"].startswith("read rate")
    assert (tmp_path / "cache" / "this-machine.json").exists()  # probe saved as this-machine
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "http" not in html.split("<body>")[1][:2000]
    assert "Bound:" in stdout and "Floor:" in stdout and "Batching bought" in stdout
    assert "Predicted before measuring" in html and (out / "predicted_vs_measured.png").exists()
    # `inferlab watch` ran beside the sweep (issue 11): its record, and MBU over time in the report
    assert (out / "watch.jsonl").stat().st_size > 0 and "over time (watch)" in html

    # `inferlab report` re-renders the same folder from saved records.
    (out / "report.html").unlink()
    code, stdout, _ = run_cli("report", str(out))
    assert code == 0 and (out / "report.html").exists()


def _every_level_predicted_before_measured(s: dict[str, Any], stdout: str, profiled: bool) -> None:
    """Each level carries the prediction made before it ran (finite, held out: nothing was
    fitted to the served run) from the served profile, or from the engine alone when the
    profile failed, its errors, and goodput under the demo's default SLO on both sides;
    the console printed both."""
    assert "SLO ttft=2s,tpot=150ms (the demo's default" in stdout
    assert "of the predicted capacity" in stdout and "predicted before measuring" in stdout
    for lv in s["levels"]:
        p = lv["predicted"]
        assert p["held_out"] is True, lv["label"]
        for x in (p["ttft_s"]["p50"], p["ttft_s"]["p99"], p["tpot_s"]["p50"], p["tokens_per_s"]):
            assert isinstance(x, float) and math.isfinite(x) and x > 0, (lv["label"], p)
        assert math.isfinite(p["goodput_requests_per_s"]) and p["goodput_requests_per_s"] >= 0
        assert p["requests"] == lv["requests_measured"]  # the specs bench sent
        if profiled:  # the profile's predictions are the ones kept (demo/profiled.py)
            assert p["source"].startswith("the served profile (profile of http://"), p["source"]
            # and how far the machine's speed moved while it was profiled
            assert "the machine's speed over the profile: its decode rounds spread" in stdout
        else:
            assert "serving overhead 0.00 ms/step (none given)" in p["source"]
        assert p["errors"]["tpot_p50"] is not None and "slo" in lv
        assert f"predicted {lv['label']:>10}:" in stdout


def test_server_crash_mid_sweep_keeps_partial_results(tmp_path: Path) -> None:
    srv = LlamaServer(ServerOptions(parallel=1, ctx_per_slot=256, log_path=tmp_path / "log"))
    srv.start()

    class KillAfterTwo(WatchServer):
        done = 0

        def request_done(self, rec: Any) -> None:
            self.done += 1
            if self.done == 2 and srv.proc:
                srv.proc.kill()
                srv.proc.wait()
            super().request_done(rec)

    cfg = BenchConfig(
        url=srv.base_url,
        model=None,
        load=Workload.fixed(
            prompt_tokens=8, output_tokens=8, levels=[Level("concurrency", 1)], requests_per_level=6
        ),
        out_dir=tmp_path,
    )
    hooks = KillAfterTwo(srv)
    try:
        with pytest.raises(InferlabError, match="crashed mid-sweep"):
            asyncio.run(run_benchmark(cfg, hooks))
    finally:
        hooks.close()
        srv.stop()
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["interrupted"] is True
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    assert len(lines) >= 3  # the two that finished and the one that failed are kept
    assert sum(1 for ln in lines if json.loads(ln)["error"] is None) >= 2
