"""`bench --workers N` and `bench --ray ADDRESS`: the sweep's levels run on a pool of workers.

The driver keeps what it always had (the server check, prompts, the one
records.jsonl, the summary); only the streaming moves into the workers. The
pool is opened once per run, each worker's clock offset is estimated at the
start and again at the end (see clock.py), and it is closed however the run
ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferlab.bench.clock import ClockOffset, ClockReport
from inferlab.bench.drive import LevelDriver, clock_offsets, clock_reports, split_level
from inferlab.bench.pool import Pool, ProcessPool
from inferlab.bench.prompt_text import Prompt
from inferlab.bench.runner import LevelContext, LevelRun
from inferlab.bench.worker import Share, WorkerJob
from inferlab.records import RequestRecord
from inferlab.summary import ClientStats, RunWarning, WorkerLevel


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How many workers, and where: local processes, or Ray actors at an address."""

    count: int = 1
    ray_address: str | None = None  # "auto": join RAY_ADDRESS's cluster or start a local one

    @property
    def enabled(self) -> bool:
        return self.count > 1 or self.ray_address is not None

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "ray_address": self.ray_address}


def _open_pool(opts: WorkerOptions) -> Pool:
    if opts.ray_address is not None:
        from inferlab.bench.ray_pool import RayPool

        return RayPool(opts.count, opts.ray_address)
    return ProcessPool(opts.count)


class Fleet:
    """An open pool and what it has reported; use `open` and `close`."""

    def __init__(self, pool: Pool, offsets: list[ClockOffset], opts: WorkerOptions) -> None:
        self.pool, self.offsets, self.opts = pool, offsets, opts
        self.lost: set[int] = set()

    @classmethod
    async def open(cls, opts: WorkerOptions) -> Fleet:
        pool = await asyncio.to_thread(_open_pool, opts)
        try:
            offsets = await asyncio.to_thread(clock_offsets, pool)
        except BaseException:
            pool.close()
            raise
        return cls(pool, offsets, opts)

    async def run_level(
        self,
        ctx: LevelContext,
        run: LevelRun,
        prompts: list[Prompt],
        warmup: int,
        first_id: int,
        on_done: Callable[[RequestRecord], None],
    ) -> LevelRun:
        """The level split across the live workers; every record reaches ctx.writer as it comes."""
        lv = run.level
        live = [w for w in range(self.pool.size) if w not in self.lost]
        shares = split_level(lv.kind, lv.value, lv.label, prompts, warmup, first_id, len(live))
        shares = [_renumber(s, live[i]) for i, s in enumerate(shares)]

        def sink(rec: RequestRecord) -> None:
            rec.repeat = run.repeat
            ctx.writer.write(rec)
            run.records.append(rec)
            on_done(rec)

        driver = LevelDriver(self.pool, self.offsets, sink)
        wall0 = time.perf_counter()
        try:
            run.workers = await driver.run(driver.jobs(_base_job(ctx), shares, ctx.t0_ns))
        except asyncio.CancelledError:
            run.interrupted = True
            raise
        finally:
            run.wall_s = time.perf_counter() - wall0
        self.lost.update(o.worker for o in run.workers if o.lost)
        run.client_cpu_s = sum(o.stats.cpu_s for o in run.workers if o.stats)
        return run

    async def close(self) -> list[ClockReport]:
        """Each worker's clock once more (drift), then the pool goes away."""
        try:
            return await asyncio.to_thread(clock_reports, self.offsets, self.pool, self.lost)
        finally:
            await asyncio.to_thread(self.pool.close)


def _renumber(share: Share, worker: int) -> Share:
    """A share for a given (live) worker id."""
    return Share(
        worker,
        share.level_label,
        share.kind,
        share.value,
        share.first_id,
        share.prompts,
        share.warmup,
    )


def _base_job(ctx: LevelContext) -> WorkerJob:
    """What every worker's job shares; the driver fills in each one's share and clock."""
    placeholder = Share(0, "", "concurrency", 0, 0, (), 0)
    return WorkerJob(
        ctx.endpoint,
        placeholder,
        ctx.max_tokens,
        ctx.prompt_tokens,
        ctx.seed,
        ctx.max_in_flight,
        0,
        0,
    )


def worker_levels(run: LevelRun, offsets: list[ClockOffset]) -> tuple[WorkerLevel, ...]:
    """The level's per-worker account, for its summary."""
    out = []
    for o in run.workers:
        st, off = o.stats, offsets[o.worker]
        out.append(
            WorkerLevel(
                worker=o.worker,
                host=st.host if st else None,
                pid=st.pid if st else None,
                requests_assigned=o.requests_assigned,
                requests_completed=sum(1 for r in run.records if r.worker == o.worker),
                cpu_s=st.cpu_s if st else None,
                cpu_fraction=st.cpu_fraction if st else None,
                loop_lag_p99_s=st.loop_lag_p99_s if st else None,
                loop_lag_max_s=st.loop_lag_max_s if st else None,
                clock_offset_ns=off.offset_ns,
                clock_uncertainty_ns=off.uncertainty_ns,
                lost=o.lost,
                lost_in_flight=o.lost_in_flight,
                not_started=o.not_started,
                error=o.error,
            )
        )
    return tuple(out)


def fleet_client_stats(run: LevelRun) -> ClientStats:
    """The client as its busiest worker saw it (the one whose stamps are the least trustworthy)."""
    stats = [o.stats for o in run.workers if o.stats]
    return ClientStats(
        cpu_s=sum(s.cpu_s for s in stats),
        wall_s=run.wall_s,
        cpu_fraction=max((s.cpu_fraction for s in stats), default=0.0),
        loop_lag_p99_s=max((s.loop_lag_p99_s for s in stats), default=0.0),
        loop_lag_max_s=max((s.loop_lag_max_s for s in stats), default=0.0),
    )


def clock_warnings(clocks: list[ClockReport]) -> list[RunWarning]:
    """clock_uncertain: a worker whose offset is known only to worse than 1 ms, or drifted."""
    out = []
    for w, c in enumerate(clocks):
        if not c.uncertain:
            continue
        worst = max(c.start.uncertainty_ns, c.end.uncertainty_ns if c.end else 0)
        msg = (
            f"worker {w}'s clock is placed on the driver's axis to +/- {worst / 1e6:.3g} ms, "
            f"drift {c.drift_ns / 1e6:.3g} ms over the run: throughput windows and mean active "
            "streams that mix workers are uncertain by that much (durations are not)"
        )
        out.append(RunWarning("clock_uncertain", "run", "warning", msg))
    return out
