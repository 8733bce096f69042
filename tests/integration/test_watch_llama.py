"""`inferlab watch` on the real llama-server under `inferlab bench` load (issue 11).

No model is given: watch reads the GGUF path from the server's /v1/models. Checks what
holds on any machine: a scrape before the bench and one after it bracket every token the
bench received (llama.cpp's counter against the bench's records), no engine step emits
more than one token per slot, each live rate is the difference of the window's raw
counters, and MBU priced at 1 TB/s (more than this box can read) stays in [0, 1].
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, run_benchmark
from inferlab.bench.canary import CANARY_TOKENS, REST_READINGS
from inferlab.bench.server_limits import PROBE_TOKENS
from inferlab.engines.llama_server import LlamaServer
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.records import read_records
from inferlab.watch.frame import Frame
from inferlab.watch.record import read_record
from tests.integration.conftest import SLOTS
from tests.lifecycle.procs import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]
INTERVAL_S = 0.5


def _scraped(rec: Path) -> list[Frame]:
    """The frames recorded so far that hold a scrape."""
    if not rec.exists():
        return []
    return [f for f in read_record(rec)[1] if f.snapshot is not None]


def test_watch_under_bench_load(llama: LlamaServer, tmp_path: Path) -> None:
    rec = tmp_path / "watch.jsonl"
    cmd = [sys.executable, "-m", "inferlab.cli", "watch", "--url", llama.base_url,
           "--bandwidth", "1TB/s", "--flops", "1PFLOPS", "--interval", f"{INTERVAL_S}s",
           "--window", "3s", "--record", str(rec), "--no-tui", "--duration", "5min"]  # fmt: skip
    watch = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(_scraped(rec)) >= 1, 120, "a scrape before the bench")
        assert watch.poll() is None, watch.communicate()[1]
        load = Workload.fixed(32, 48, [Level("concurrency", 2)], requests_per_level=4)
        cfg = BenchConfig(url=llama.base_url, model=None, load=load, out_dir=tmp_path / "b")
        asyncio.run(run_benchmark(cfg))
        done_s = time.perf_counter()  # the watch stamps scrapes on this same clock
        wait_for(lambda: _scraped(rec)[-1].t_mono_s > done_s, 120, "a scrape after the bench")
    finally:
        watch.send_signal(signal.SIGINT)  # Ctrl-C: exit 0, the record flushed
        _, err = watch.communicate(timeout=30)
    assert watch.returncode == 0, err
    header, frames = read_record(rec)
    assert header.model.lower().startswith("smollm2"), header.model  # from /v1/models
    t = [f.t_mono_s for f in frames]
    assert t == sorted(t)

    # llama.cpp counts a request's tokens when it ends: between a scrape taken before the
    # bench and one taken after it, exactly the bench's tokens (nothing else used the server):
    # its records', its check that the address streams OpenAI's way (no record), the
    # one token each slot gave when bench settled them before the level (bench/settle.py),
    # and its drift canary's (bench/canary.py: 3 at rest, one after the level).
    scraped = [f for f in frames if f.snapshot is not None]
    before, after = scraped[0].snapshot, scraped[-1].snapshot
    assert before is not None and after is not None
    assert before.generation_tokens is not None and after.generation_tokens is not None
    recs = read_records(tmp_path / "b" / "records.jsonl")
    generated = after.generation_tokens - before.generation_tokens
    canary = CANARY_TOKENS * (REST_READINGS + 1)
    assert generated == sum(r.n_out for r in recs) + PROBE_TOKENS + SLOTS + canary
    assert before.steps is not None and after.steps is not None
    assert after.steps - before.steps >= generated / SLOTS  # <= one token per slot a step

    by_t = {f.t_mono_s: f.snapshot for f in scraped}
    windows = 0
    for f in scraped:
        lv, b = f.live, f.snapshot
        if lv is None or b is None or lv.mbu.value is None:
            continue
        assert 0 <= lv.mbu.value <= 1, lv.mbu
        a = by_t.get(f.t_mono_s - lv.window_s)  # the window's first scrape, when recorded
        if a is None or a.steps is None or b.steps is None or lv.steps_per_s.value is None:
            continue
        windows += 1
        steps_per_s = (b.steps - a.steps) / (b.t_mono_s - a.t_mono_s)
        assert lv.steps_per_s.value == pytest.approx(steps_per_s, rel=1e-9)
    assert windows >= 1
