"""bench --workers N against the scripted server: every record, exact ids, honest stamps.

The server logs when it wrote each token (the same CLOCK_MONOTONIC every process on
this host reads), so each record's stamps can be checked against the truth whichever
worker took them.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import urllib.request
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, BenchResult, event_loop_runner, run_benchmark
from inferlab.bench.fleet import WorkerOptions
from inferlab.bench.progress import Hooks
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.records import RequestRecord, read_records

pytestmark = pytest.mark.slow  # the fake server and worker processes


def _bench(
    url: str, out: Path, workers: int, c: int, n: int, tokens: int, hooks: Hooks | None = None
) -> BenchResult:  # noqa: E501
    cfg = BenchConfig(
        url=url,
        model="fake",
        load=Workload.fixed(
            prompt_tokens=8,
            output_tokens=tokens,
            levels=[Level("concurrency", c)],
            requests_per_level=n,
            warmup=0,
        ),
        out_dir=out,
        workers=WorkerOptions(workers),
    )
    result: BenchResult = event_loop_runner()(run_benchmark(cfg, hooks))
    return result


def _lateness_ns(url: str, res: BenchResult) -> dict[int, list[float]]:
    """Per worker: how late the driver's axis puts each token after the server wrote it."""
    with urllib.request.urlopen(url.replace("/v1", "/debug/log")) as r:
        log = json.load(r)
    origin = res.summary.to_json()["clock"]["origin_ns"]
    late: dict[int, list[float]] = {}
    for rec in read_records(res.records_path):
        written = log[rec.prompt_sha1]["write_ns"]
        assert len(rec.event_ns) == len(written)  # one stamp per token
        assert rec.event_ns == sorted(rec.event_ns)  # in order
        late.setdefault(rec.worker or 0, []).extend(
            origin + t - w for t, w in zip(rec.event_ns, written, strict=True)
        )
    return late


def test_two_workers_keep_every_record_and_stamp_on_the_drivers_axis(
    fake_url: str, tmp_path: Path
) -> None:
    c, tokens = 512, 12
    two = _bench(fake_url, tmp_path / "two", 2, c, c, tokens)
    late = _lateness_ns(fake_url, two)
    recs = read_records(two.records_path)
    assert len(recs) == c and sorted(r.request_id for r in recs) == list(range(c))
    assert {r.worker for r in recs} == {0, 1}
    assert all(r.ok and r.n_out == tokens for r in recs)
    level = two.summary.levels[0]
    assert level.requests_ok == c and level.workers is not None
    assert sorted(w.requests_completed for w in level.workers) == [256, 256]
    # Every token of every record is on the driver's axis: never before the server wrote it,
    # but for the uncertainty of its worker's clock offset (same host: the same clock,
    # so the offset is ~0 and known to the round trip of one ping). How promptly one or
    # two workers stamp at this load is a figure benchmarks/stamp_precision.py prints.
    for w in level.workers:
        assert min(late[w.worker]) >= -w.clock_uncertainty_ns, w


class _KillWorkerOne(Hooks):
    """After a few records, SIGKILL the second worker process: a lost host, mid-level."""

    def __init__(self) -> None:
        self.seen = 0
        self.killed: int | None = None

    def request_done(self, rec: RequestRecord) -> None:
        self.seen += 1
        if self.seen == 6 and self.killed is None:
            victim = sorted(multiprocessing.active_children(), key=lambda p: p.name)[1]
            assert victim.pid is not None
            os.kill(victim.pid, signal.SIGKILL)
            self.killed = victim.pid


def test_a_killed_worker_costs_only_its_in_flight_requests(fake_url: str, tmp_path: Path) -> None:
    c, n = 8, 40
    hooks = _KillWorkerOne()
    res = _bench(fake_url, tmp_path, 2, c, n, 20, hooks)
    assert hooks.killed is not None
    recs = read_records(res.records_path)
    lost = [r for r in recs if r.error and r.error.startswith("worker_lost")]
    assert 1 <= len(lost) <= c // 2  # worker 1's streams in flight, no more
    survivor = [r for r in recs if r.worker == 0]
    assert len(survivor) == n // 2 and all(r.ok for r in survivor)  # it finished its share
    assert len({r.request_id for r in recs}) == len(recs)
    level = res.summary.levels[0]
    assert level.workers is not None
    w1 = next(w for w in level.workers if w.worker == 1)
    assert w1.lost and w1.lost_in_flight == len(lost)
    assert w1.lost_in_flight + w1.not_started + w1.requests_completed - len(lost) <= n // 2
    assert sum(1 for r in recs if r.ok) == n // 2 + (w1.requests_completed - len(lost))
    codes = {w.code for w in res.summary.warnings}
    assert "worker_lost" in codes
