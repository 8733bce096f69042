"""`inferlab watch` on the real llama-server under `inferlab bench` load (issue 11).

No model is given: watch reads the GGUF path from the server's /v1/models.
Checks: MBU in (0, 1]; engine steps/s within 10 % of the bench's own step
rate (1 / client TPOT p50) while both streams decode; >= 1 record line per interval.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, run_benchmark
from inferlab.bench.runner import Level
from inferlab.engines.llama_server import LlamaServer
from inferlab.watch.record import read_record

pytestmark = [pytest.mark.integration, pytest.mark.slow]
INTERVAL_S = 0.5


def test_watch_under_bench_load(llama: LlamaServer, tmp_path: Path) -> None:
    rec = tmp_path / "watch.jsonl"
    cmd = [sys.executable, "-m", "inferlab.cli", "watch", "--url", llama.base_url,
           # this machine's read bandwidth is ~20-55 GB/s; the figure only scales MBU
           "--bandwidth", "20GB/s", "--flops", "200GFLOPS", "--interval", f"{INTERVAL_S}s",
           "--window", "3s", "--record", str(rec), "--no-tui", "--duration", "5min"]  # fmt: skip
    watch = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.0)
        assert watch.poll() is None, watch.communicate()[1]
        cfg = BenchConfig(
            url=llama.base_url, model=None, levels=[Level("concurrency", 2)],
            requests_per_level=6, prompt_tokens=32, output_tokens=128, out_dir=tmp_path / "b",
        )  # fmt: skip
        summary = asyncio.run(run_benchmark(cfg)).summary
        time.sleep(1.0)
    finally:
        watch.send_signal(signal.SIGINT)  # Ctrl-C: exit 0, the record flushed
        _, err = watch.communicate(timeout=30)
    assert watch.returncode == 0, err
    header, frames = read_record(rec)
    assert header.model.lower().startswith("smollm2"), header.model  # from /v1/models
    span_s = frames[-1].t_unix_s - frames[0].t_unix_s
    assert len(frames) >= span_s / INTERVAL_S  # at least one sample per interval

    # frames whose whole window had both streams decoding, a step in every interval (this
    # shared machine stalls the server for seconds at times; the client's TPOT p50 skips those)
    per_window = round(3.0 / INTERVAL_S)
    steady = []
    for i in range(per_window, len(frames)):
        win = frames[i - per_window : i + 1]
        snaps = [f.snapshot for f in win]
        if all(s is not None and s.running == 2.0 for s in snaps) and all(
            b.steps > a.steps
            for a, b in zip(snaps, snaps[1:], strict=False)  # type: ignore[union-attr,operator]
        ):
            steady.append(frames[i])
    assert len(steady) >= 3, [f.snapshot.steps for f in frames if f.snapshot]
    for f in steady:
        assert f.live is not None and f.live.mbu.value is not None
        assert 0 < f.live.mbu.value <= 1, f.live.mbu
    # The bench's own step rate over the same windows, from its token timestamps (one token
    # per stream per step; same monotonic clock as the scrapes), so a stall counts in both.
    assert summary.clock is not None
    origin_s = summary.clock["origin_ns"] / 1e9
    events = sorted(
        origin_s + ns / 1e9
        for line in (tmp_path / "b" / "records.jsonl").read_text().splitlines()
        for ns in json.loads(line).get("event_ns") or []
    )
    ratios = []
    for f in steady:
        assert f.live is not None and f.live.steps_per_s.value
        t1 = f.t_mono_s
        t0 = t1 - f.live.window_s
        n = bisect.bisect_right(events, t1) - bisect.bisect_right(events, t0)
        ratios.append(f.live.steps_per_s.value / (n / 2 / f.live.window_s))
    ratio = statistics.median(ratios)
    tpot_p50 = summary.levels[0].tpot_s.p50
    assert tpot_p50 is not None
    tpot_rate = 1 / tpot_p50
    watch_rate = statistics.median(f.live.steps_per_s.value or 0 for f in steady if f.live)
    mbu = statistics.median(f.live.mbu.value or 0 for f in steady if f.live)
    print(
        f"\nwatch/bench step rate over the same windows: median {ratio:.3f} "
        f"({min(ratios):.3f}..{max(ratios):.3f}); watch {watch_rate:.3g} steps/s, "
        f"1/TPOT p50 {tpot_rate:.3g}; MBU median {mbu:.3g}; {len(steady)}/{len(frames)} frames"
    )
    assert ratio == pytest.approx(1.0, rel=0.10)
