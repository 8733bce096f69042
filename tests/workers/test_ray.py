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
from inferlab.bench.runner import Level
from inferlab.records import RequestRecord, read_records

pytestmark = pytest.mark.slow  # the fake server and Ray actors


# As inferlab does before it imports ray (bench/ray_pool.py): actors must not start via `uv run`.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
ray = pytest.importorskip("ray", reason="the ray extra is not installed (uv sync installs it)")


class _KillActorOne(Hooks):
    """After a few records, kill the second actor: what losing its node does."""

    def __init__(self) -> None:
        self.seen, self.killed = 0, False

    def request_done(self, rec: RequestRecord) -> None:
        self.seen += 1
        if self.seen == 6 and not self.killed:
            from inferlab.bench.ray_pool import RayPool

            assert RayPool.latest is not None
            RayPool.latest.kill(1)
            self.killed = True


def _bench(url: str, out: Path, c: int, n: int, hooks: Hooks | None = None) -> BenchResult:
    cfg = BenchConfig(
        url=url,
        model="fake",
        levels=[Level("concurrency", c), Level("concurrency", c)],
        requests_per_level=n,
        warmup=0,
        prompt_tokens=8,
        output_tokens=20,
        out_dir=out,
        workers=WorkerOptions(2, "auto"),
    )
    result: BenchResult = event_loop_runner()(run_benchmark(cfg, hooks))
    return result


def test_two_ray_actors_then_one_lost(fake_url: str, tmp_path: Path) -> None:
    whole = _bench(fake_url, tmp_path / "whole", 8, 16)
    hooks = _KillActorOne()
    broken = _bench(fake_url, tmp_path / "broken", 8, 40, hooks)
    recs = read_records(whole.records_path)
    assert sorted(r.request_id for r in recs) == list(range(32))
    assert {r.worker for r in recs} == {0, 1} and all(r.ok for r in recs)
    assert all(r.host for r in recs)  # each record names the host its actor ran on
    assert hooks.killed
    recs = read_records(broken.records_path)
    lost = [r for r in recs if r.error and r.error.startswith("worker_lost")]
    assert 1 <= len(lost) <= 4 and all(r.worker == 1 for r in lost)
    assert len({r.request_id for r in recs}) == len(recs)
    level = broken.summary.levels[0]
    assert level.workers is not None
    assert next(w for w in level.workers if w.worker == 1).lost
    assert "worker_lost" in {w.code for w in broken.summary.warnings}
    # The second level ran on the surviving actor alone: every request of it completed.
    second = [r for r in recs if r.request_id >= 40]
    assert len(second) == 40 and all(r.ok and r.worker == 0 for r in second)
