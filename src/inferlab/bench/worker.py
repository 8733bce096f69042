"""One streaming worker: the same event loop, stamping and records wherever it runs.

`WorkerHost` lives inside a worker — a child process or a Ray actor (the
in-process default runs `runner.run_level` directly). `ping()` reads its
monotonic clock for the driver's offset estimate; `run(job)` runs this
worker's share of a level on its own event loop (a thread) and yields message
batches as requests start and complete, so the driver writes every record as
it arrives. Messages are plain tuples (picklable, cheap):

    ("started", request_id)    a request was sent (lost with the worker -> failed record)
    ("record", record_json)    a request completed (its times on the run's axis)
    ("stats", WorkerStats)     the share ended: this worker's CPU, wall time, loop lag
    ("error", text)            the share broke (the driver records it, the run goes on)
"""

from __future__ import annotations

import asyncio
import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from inferlab.bench.client import Endpoint
from inferlab.bench.prompt_text import Prompt
from inferlab.vocab import LevelKind

BATCH_EVERY_S = 0.05  # how often a worker ships what completed: ~20 messages/s at most
HEARTBEAT_S = 1.0  # an empty batch at least this often: the driver knows the worker lives
Message = tuple[str, Any]


@dataclass(frozen=True, slots=True)
class Share:
    """One worker's part of one level."""

    worker: int
    level_label: str  # the whole level's label, e.g. "c=1024"
    kind: LevelKind
    value: float  # this worker's streams, or its share of the arrival rate (rate / N)
    first_id: int  # the level's first request id: a prompt's id is first_id + its index
    prompts: tuple[Prompt, ...]
    warmup: int  # prompts whose index is below this are warm-up (the level's count)


@dataclass(frozen=True, slots=True)
class WorkerJob:
    endpoint: Endpoint
    share: Share
    max_tokens: int
    prompt_tokens: int
    seed: int
    max_in_flight: int
    t0_ns: int  # the run's origin, in this worker's clock
    start_ns: int  # the shared start instant, in this worker's clock


@dataclass(frozen=True, slots=True)
class WorkerStats:
    worker: int
    host: str
    pid: int
    cpu_s: float  # this worker's process CPU during its share
    wall_s: float
    loop_lag_p99_s: float
    loop_lag_max_s: float
    requests: int

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}

    @property
    def cpu_fraction(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0


class _Forward:
    """A record writer that ships records to the driver instead of a file."""

    def __init__(self, out: queue.SimpleQueue[Message], share: Share, host: str) -> None:
        self.out, self.share, self.host = out, share, host

    def write(self, rec: Any) -> None:
        rec.worker = self.share.worker
        rec.host = self.host
        self.out.put(("record", rec.to_json()))


class WorkerHost:
    """What runs inside a worker process or Ray actor."""

    def __init__(self) -> None:
        self.host = socket.gethostname()
        self._cancel: threading.Event = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None

    def ping(self) -> int:
        return time.perf_counter_ns()

    def cancel(self) -> None:
        """Stop starting requests; what completed is still shipped."""
        self._cancel.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)

    def run(self, job: WorkerJob) -> Iterator[list[Message]]:
        """Run the share on a fresh event loop in a thread; yield what happens, batched.

        An empty batch is a heartbeat (at least every HEARTBEAT_S)."""
        out: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self._cancel.clear()
        thread = threading.Thread(target=self._thread_main, args=(job, out), daemon=True)
        thread.start()
        last = time.monotonic()
        while True:
            batch = _drain(out, BATCH_EVERY_S)
            if batch or time.monotonic() - last >= HEARTBEAT_S:
                yield batch
                last = time.monotonic()
            if any(kind in ("stats", "error") for kind, _ in batch):
                break
        thread.join(timeout=5.0)

    def _thread_main(self, job: WorkerJob, out: queue.SimpleQueue[Message]) -> None:
        from inferlab.bench.runner import event_loop_runner

        try:
            event_loop_runner()(self._share(job, out))
        except BaseException as e:  # the driver must hear of it, whatever it was
            out.put(("error", f"{type(e).__name__}: {e}"))

    async def _share(self, job: WorkerJob, out: queue.SimpleQueue[Message]) -> None:
        import aiohttp

        from inferlab.bench.client import make_connector
        from inferlab.bench.runner import LevelContext, LevelRun, run_level
        from inferlab.load.spec import Level

        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        share = job.share
        run = LevelRun(Level(share.kind, share.value, share.level_label))
        cpu0 = time.process_time()
        delay_s = (job.start_ns - time.perf_counter_ns()) / 1e9
        if delay_s > 0:
            await asyncio.sleep(min(delay_s, 60.0))  # bounded: the driver asks for ~0.3 s
        connector = make_connector(job.max_in_flight)
        async with aiohttp.ClientSession(connector=connector, read_bufsize=1 << 20) as session:
            ctx = LevelContext(
                session,
                job.endpoint,
                _Forward(out, share, self.host),  # type: ignore[arg-type]
                job.t0_ns,
                job.max_tokens,
                job.prompt_tokens,
                seed=job.seed,
                max_in_flight=job.max_in_flight,
                on_start=lambda rid: out.put(("started", rid)),
            )
            try:
                if not self._cancel.is_set():
                    await run_level(ctx, run, list(share.prompts), share.warmup, share.first_id)
            except asyncio.CancelledError:
                pass  # cancelled by the driver: what completed was already shipped
        out.put(("stats", self._stats(share, run, time.process_time() - cpu0)))

    def _stats(self, share: Share, run: Any, cpu_s: float) -> WorkerStats:
        from inferlab.bench.lag import lag_p99_s

        lags = run.loop_lag_s
        return WorkerStats(
            share.worker,
            self.host,
            os.getpid(),
            cpu_s,
            run.wall_s,
            lag_p99_s(lags),
            max(lags, default=0.0),
            len(run.records),
        )


def _drain(out: queue.SimpleQueue[Message], wait_s: float) -> list[Message]:
    """Everything queued now, waiting up to wait_s for the first message."""
    try:
        batch = [out.get(timeout=wait_s)]
    except queue.Empty:
        return []
    while True:
        try:
            batch.append(out.get_nowait())
        except queue.Empty:
            return batch
