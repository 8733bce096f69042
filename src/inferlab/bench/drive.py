"""The driver's side of a multi-worker level: split, start together, merge exactly.

A level is split across workers (c=1024 over 4 workers = 256 streams each;
an open loop's schedule is dealt round-robin, each worker sending its requests
at their scheduled instants), all starting at one shared instant. Every raw
record comes back to the driver, which writes it to the one records.jsonl as it
arrives; summaries are computed from the merged raw records, so percentiles are
exact, never merged histograms. A worker that dies costs only the requests it
had in flight: they are recorded as failed with the reason, and the level goes on.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inferlab.bench.clock import ClockOffset, ClockReport, estimate_offset
from inferlab.bench.pool import Pool, WorkerLost
from inferlab.bench.prompt_text import Prompt
from inferlab.bench.worker import Share, WorkerJob, WorkerStats
from inferlab.records import RequestRecord
from inferlab.vocab import LevelKind

START_DELAY_NS = 300_000_000  # time for every worker to receive its job before the shared start
DRAIN_AFTER_CANCEL_S = 10.0


@dataclass(slots=True)
class WorkerOutcome:
    """One worker's account of one level."""

    worker: int
    requests_assigned: int
    stats: WorkerStats | None = None
    lost: str | None = None  # why the worker was lost, if it was
    error: str | None = None  # the share broke inside the worker
    lost_in_flight: int = 0  # requests failed because the worker died mid-request
    not_started: int = 0  # requests of its share never sent (the worker died first)

    def to_json(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "requests_assigned": self.requests_assigned,
            "stats": self.stats.to_json() if self.stats else None,
            "lost": self.lost,
            "error": self.error,
            "lost_in_flight": self.lost_in_flight,
            "not_started": self.not_started,
        }


def split_counts(total: int, parts: int) -> list[int]:
    """total split as evenly as integers allow: 10 over 4 -> [3, 3, 2, 2]."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def split_level(
    kind: LevelKind,
    value: float,
    label: str,
    prompts: list[Prompt],
    warmup: int,
    first_id: int,
    workers: int,
) -> list[Share]:
    """This level's shares: streams (or rate) and requests divided among the workers.

    Prompts are dealt round-robin (a conversation's turns as one): each worker's warm-up
    comes first in its share, and
    in an open loop each worker sends 1/N of the schedule at the same instants. Prompts
    keep their index in the level (their request id and warm-up mark).
    """
    open_loop = kind != "concurrency"
    n = workers if open_loop else min(workers, int(value))
    n = max(1, n)
    values = [value / n] * n if open_loop else split_counts(int(value), n)
    chunks: list[list[Prompt]] = [[] for _ in range(n)]
    for k, chain in enumerate(_chains(prompts)):  # a conversation stays on one worker
        chunks[k % n].extend(chain)
    return [Share(i, label, kind, values[i], first_id, tuple(chunks[i]), warmup) for i in range(n)]


def _chains(prompts: list[Prompt]) -> list[list[Prompt]]:
    """Consecutive turns of one conversation together; every other prompt alone."""
    out: list[list[Prompt]] = []
    for p in prompts:
        same = out and p.turn > 0 and p.conversation_id is not None
        if same and out[-1][-1].conversation_id == p.conversation_id:
            out[-1].append(p)
        else:
            out.append([p])
    return out


def clock_offsets(pool: Pool) -> list[ClockOffset]:
    return [estimate_offset(lambda w=w: pool.ping(w)) for w in range(pool.size)]  # type: ignore[misc]


@dataclass(slots=True)
class _Tracker:
    """What the driver knows of each worker while a level runs."""

    shares: list[Share]
    in_flight: list[set[int]] = field(default_factory=list)
    done: list[set[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.in_flight = [set() for _ in self.shares]
        self.done = [set() for _ in self.shares]


def _lost_record(
    share: Share, request_id: int, max_tokens: int, prompt_tokens: int, why: str
) -> RequestRecord:
    p = next(p for p in share.prompts if share.first_id + p.index == request_id)
    return RequestRecord(
        request_id=request_id,
        level=share.level_label,
        phase="warmup" if p.index < share.warmup else "measure",
        prompt_tokens_target=p.target_tokens or prompt_tokens,
        max_tokens=p.max_tokens or max_tokens,
        prompt_sha1=p.sha1,
        error=f"worker_lost: worker {share.worker}: {why}",
        worker=share.worker,
    )


class LevelDriver:
    """Runs one level on a pool and hands every record to `sink` as it arrives."""

    def __init__(
        self, pool: Pool, offsets: list[ClockOffset], sink: Callable[[RequestRecord], None]
    ) -> None:
        self.pool, self.offsets, self.sink = pool, offsets, sink

    def jobs(self, base: WorkerJob, shares: list[Share], t0_ns: int) -> list[WorkerJob]:
        """Per-worker jobs: the run origin and one shared start, each in that worker's clock."""
        start = time.perf_counter_ns() + START_DELAY_NS
        out = []
        for s in shares:
            off = self.offsets[s.worker]
            out.append(
                WorkerJob(
                    base.endpoint,
                    s,
                    base.max_tokens,
                    base.prompt_tokens,
                    base.seed + 7919 * s.worker,
                    base.max_in_flight,
                    off.to_worker(t0_ns),
                    off.to_worker(start),
                )
            )
        return out

    async def run(self, jobs: list[WorkerJob]) -> list[WorkerOutcome]:
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()
        track = _Tracker([j.share for j in jobs])
        outcomes = [WorkerOutcome(j.share.worker, len(j.share.prompts)) for j in jobs]
        for j in jobs:
            threading.Thread(
                target=self._pump, args=(j, loop, inbox), daemon=True, name="inferlab-pump"
            ).start()
        live = len(jobs)
        try:
            while live:
                w, item = await inbox.get()
                live -= self._handle(jobs[w], item, track, outcomes[w])
        except asyncio.CancelledError:
            for j in jobs:
                self.pool.cancel(j.share.worker)
            await self._drain(jobs, inbox, track, outcomes, live)
            raise
        return outcomes

    async def _drain(
        self,
        jobs: list[WorkerJob],
        inbox: asyncio.Queue[tuple[int, Any]],
        track: _Tracker,
        outcomes: list[WorkerOutcome],
        live: int,
    ) -> None:
        """After Ctrl-C: keep what the workers still ship, for a bounded while."""
        deadline = time.monotonic() + DRAIN_AFTER_CANCEL_S
        while live and time.monotonic() < deadline:
            try:
                w, item = await asyncio.wait_for(inbox.get(), deadline - time.monotonic())
            except (TimeoutError, asyncio.CancelledError):
                return
            live -= self._handle(jobs[w], item, track, outcomes[w])

    def _pump(
        self, job: WorkerJob, loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[tuple[int, Any]]
    ) -> None:
        """A thread per worker: its stream of batches into the driver's loop."""
        w = job.share.worker

        def put(item: Any) -> None:
            loop.call_soon_threadsafe(inbox.put_nowait, (w, item))

        try:
            for batch in self.pool.stream(w, job):
                if batch:
                    put(batch)
            put("end")
        except WorkerLost as e:
            put(e)
        except BaseException as e:  # noqa: BLE001 - any failure of the transport loses the worker
            put(WorkerLost(f"{type(e).__name__}: {e}"))

    def _handle(self, job: WorkerJob, item: Any, track: _Tracker, out: WorkerOutcome) -> int:
        """Apply one item from worker's pump; 1 when that worker is finished."""
        w = job.share.worker
        if isinstance(item, WorkerLost):
            self._fail_in_flight(job, str(item), track, out)
            return 1
        if item == "end":
            return 1
        for kind, value in item:
            self._message(kind, value, w, track, out)
        return 0

    def _message(self, kind: str, value: Any, w: int, track: _Tracker, out: WorkerOutcome) -> None:
        if kind == "started":
            track.in_flight[w].add(value)
        elif kind == "record":
            rec = RequestRecord.from_json(value)
            track.in_flight[w].discard(rec.request_id)
            track.done[w].add(rec.request_id)
            self.sink(rec)
        elif kind == "stats":
            out.stats = value
        elif kind == "error":
            out.error = str(value)

    def _fail_in_flight(
        self, job: WorkerJob, why: str, track: _Tracker, out: WorkerOutcome
    ) -> None:
        w, share = job.share.worker, job.share
        out.lost = why
        for rid in sorted(track.in_flight[w]):
            self.sink(_lost_record(share, rid, job.max_tokens, job.prompt_tokens, why))
        out.lost_in_flight = len(track.in_flight[w])
        out.not_started = len(share.prompts) - len(track.done[w]) - out.lost_in_flight
        track.in_flight[w].clear()


def clock_reports(start: list[ClockOffset], pool: Pool, lost: set[int]) -> list[ClockReport]:
    """Each worker's clock at the start and (where it still answers) at the end."""
    out = []
    for w, first in enumerate(start):
        end = None
        if w not in lost:
            try:
                end = estimate_offset(lambda w=w: pool.ping(w))  # type: ignore[misc]
            except WorkerLost:
                end = None
        out.append(ClockReport(first, end))
    return out
