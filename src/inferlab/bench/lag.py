"""Event-loop lag: how late a timer fires. A busy client shows up here.

A blocked loop delays every pending wake-up by the time it is blocked, so a
sampler sees the same lags at any rate; what the rate buys is resolution of
the tail. Each wake-up is not free, though: on a 2-core cloud VM one costs about
0.2 ms of CPU (the kernel's share, not Python's), so a fixed 40 Hz sampler was
0.8 % of a core by itself while waiting on a slow server. The sampler adapts:

- 40 Hz while the loop shows lag (the last sample late by >= 1 ms): a busy
  client gets the tail resolved where it matters;
- 10 Hz while tokens flow on a quiet loop;
- 4 Hz while nothing arrives (a long prefill, a queue): nothing runs, so
  nothing can be late, and the worker stays under 0.1 % of a core.

Busy stretches are sampled more densely, so the p99 leans towards them: a
conservative reading for the "client saturated" check.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from inferlab.bench.client import SOCKET_READS

BUSY_PERIOD_S = 0.025
FLOWING_PERIOD_S = 0.1
IDLE_PERIOD_S = 0.25
BUSY_LAG_S = 0.001


class LagMonitor:
    """Samples the running loop's lag on a chain of timers (no task, no future per sample)."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._reads = 0

    def _period_s(self) -> float:
        if self.lags and self.lags[-1] >= BUSY_LAG_S:
            return BUSY_PERIOD_S
        reads, self._reads = self._reads, SOCKET_READS.n
        return FLOWING_PERIOD_S if SOCKET_READS.n != reads else IDLE_PERIOD_S

    def _arm(self) -> None:
        assert self._loop is not None
        period = self._period_s()
        self._due = time.perf_counter() + period
        self._handle = self._loop.call_later(period, self._fire)

    def _fire(self) -> None:
        self.lags.append(max(0.0, time.perf_counter() - self._due))
        self._arm()

    def __enter__(self) -> LagMonitor:
        self._loop = asyncio.get_running_loop()
        self._reads = SOCKET_READS.n
        self._arm()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.cancel()


def lag_p99_s(lags: list[float]) -> float:
    if len(lags) < 2:
        return lags[0] if lags else 0.0
    return statistics.quantiles(lags, n=100, method="inclusive")[98]
