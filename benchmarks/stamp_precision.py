"""Stamp precision: how late the client stamps a token after the fake server wrote it.

The tests check what the client guarantees (one stamp per token, in order, never before
the server's write, on the same CLOCK_MONOTONIC); how *late* a stamp is depends on the
machine and its load, so it is printed here, not bounded in a test. Each row is one
bench level against the scripted fake server (tests' script: TTFT 50 ms, TPOT 20 ms,
every 10th gap 3x), its lateness (client stamp minus the server's write time, from the
server's /debug/log) over every token of the measured requests.

    uv run python benchmarks/stamp_precision.py [--workers-row]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from inferlab.bench.benchmark import BenchConfig, BenchResult, event_loop_runner, run_benchmark
from inferlab.bench.fleet import WorkerOptions
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.records import read_records
from inferlab.testing.fake_server import running_fake_server


def _bench(url: str, out: Path, c: int, n: int, tokens: int, workers: int) -> BenchResult:
    cfg = BenchConfig(
        url=url,
        model="fake",
        load=Workload.fixed(
            prompt_tokens=16,
            output_tokens=tokens,
            levels=[Level("concurrency", c)],
            requests_per_level=n,
        ),
        out_dir=out,
        workers=WorkerOptions(workers) if workers > 1 else WorkerOptions(),
    )
    result: BenchResult = event_loop_runner()(run_benchmark(cfg))
    return result


def lateness_ms(url: str, res: BenchResult) -> np.ndarray[Any, Any]:
    """Every measured token: client stamp - server write, in ms."""
    with urllib.request.urlopen(url.replace("/v1", "/debug/log")) as r:
        log = json.load(r)
    origin = res.summary.to_json()["clock"]["origin_ns"]
    late: list[float] = []
    for rec in read_records(res.records_path):
        if rec.phase != "measure":
            continue
        written = np.asarray(log[rec.prompt_sha1]["write_ns"], dtype=float)
        late.extend((np.asarray(rec.event_ns, dtype=float) + origin - written) / 1e6)
    return np.asarray(late)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--workers-row",
        action="store_true",
        help="also c=512 with one worker and with two (bench --workers 2)",
    )
    a = p.parse_args()
    rows = [(1, 16, 50, 1), (64, 64, 50, 1)]
    if a.workers_row:
        rows += [(512, 512, 12, 1), (512, 512, 12, 2)]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    print(f"{'level':>8} {'workers':>7} {'tokens':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (c, n, tokens, workers) in enumerate(rows):
            with running_fake_server(ttft=0.05, tpot=0.02, slow_every=10) as url:
                res = _bench(url, Path(tmp) / str(i), c, n, tokens, workers)
                late = lateness_ms(url, res)
            p50, p99 = np.percentile(late, [50, 99])
            print(
                f"{f'c={c}':>8} {workers:>7} {late.size:>7} {p50:>7.2f} {p99:>7.2f} "
                f"{late.max():>7.2f}"
            )


if __name__ == "__main__":
    main()
