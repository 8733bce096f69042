"""bench --ray on a local Ray cluster (two actors): the same checks as local workers.

Ray is in the dev group, so CI runs this on a one-node cluster the test starts
(`--ray auto` with none running starts one, and stops it at the end).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, BenchResult, event_loop_runner, run_benchmark
from inferlab.bench.fleet import WorkerOptions
from inferlab.bench.progress import Hooks
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.records import RequestRecord, read_records

pytestmark = pytest.mark.slow  # the fake server and Ray actors


# As inferlab does before it imports ray (bench/ray_pool.py): actors must not start via `uv run`.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
ray = pytest.importorskip("ray", reason="the ray extra is not installed (uv sync installs it)")


N = 16  # requests per level


class _KillActorOne(Hooks):
    """A few records into the second level, kill the second actor: what losing its node does."""

    def __init__(self) -> None:
        self.seen, self.killed = 0, False

    def request_done(self, rec: RequestRecord) -> None:
        self.seen += 1
        if self.seen == N + 6 and not self.killed:
            from inferlab.bench.ray_pool import RayPool

            assert RayPool.latest is not None
            RayPool.latest.kill(1)
            self.killed = True


def test_two_ray_actors_then_one_lost(fake_url: str, tmp_path: Path) -> None:
    """One run on one cluster (`--ray auto` starts it and stops it): the first level whole
    on two actors, the second loses actor 1 mid-level, the third runs on the survivor."""
    cfg = BenchConfig(
        url=fake_url,
        model="fake",
        load=Workload.fixed(
            prompt_tokens=8,
            output_tokens=20,
            levels=[Level("concurrency", 8)] * 3,
            requests_per_level=N,
            warmup=0,
        ),
        out_dir=tmp_path,
        workers=WorkerOptions(2, "auto"),
    )
    hooks = _KillActorOne()
    result: BenchResult = event_loop_runner()(run_benchmark(cfg, hooks))
    recs = read_records(result.records_path)
    assert len({r.request_id for r in recs}) == len(recs)
    whole = [r for r in recs if r.request_id < N]
    assert sorted(r.request_id for r in whole) == list(range(N))
    assert {r.worker for r in whole} == {0, 1} and all(r.ok for r in whole)
    assert all(r.host for r in whole)  # each record names the host its actor ran on
    assert hooks.killed
    lost = [r for r in recs if r.error and r.error.startswith("worker_lost")]
    assert 1 <= len(lost) <= 4 and all(r.worker == 1 and N <= r.request_id < 2 * N for r in lost)
    broken = result.summary.levels[1]
    assert broken.workers is not None
    assert next(w for w in broken.workers if w.worker == 1).lost
    assert "worker_lost" in {w.code for w in result.summary.warnings}
    # The third level ran on the surviving actor alone: every request of it completed.
    third = [r for r in recs if r.request_id >= 2 * N]
    assert len(third) == N and all(r.ok and r.worker == 0 for r in third)
