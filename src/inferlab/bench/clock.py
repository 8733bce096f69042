"""Placing several hosts' monotonic clocks on the driver's time axis.

Durations (TTFT, gaps, E2E) are always differences of one host's own
monotonic clock, so they need no correction. Only to put records from several
hosts on one axis (throughput windows, mean active streams) does the driver
need each worker's clock offset. It is estimated as NTP does: ping the worker,
take the worker's reading as taken at the midpoint of the round trip, and keep
half the round trip as the uncertainty; the best of a few pings (smallest round
trip) wins. Estimated at the start and at the end of a run, the two also bound
the drift.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PINGS = 5
# Above this, records from different hosts cannot be interleaved to the millisecond.
UNCERTAIN_NS = 1_000_000


@dataclass(frozen=True, slots=True)
class ClockOffset:
    """worker clock = driver clock + offset_ns, within +/- uncertainty_ns."""

    offset_ns: int
    uncertainty_ns: int  # half the best round trip

    def to_driver(self, worker_ns: int) -> int:
        return worker_ns - self.offset_ns

    def to_worker(self, driver_ns: int) -> int:
        return driver_ns + self.offset_ns

    def to_json(self) -> dict[str, Any]:
        return {"offset_ns": self.offset_ns, "uncertainty_ns": self.uncertainty_ns}


def estimate_offset(
    ping: Callable[[], int], pings: int = PINGS, clock: Callable[[], int] = time.perf_counter_ns
) -> ClockOffset:
    """The offset of the clock `ping()` reads, from the round trip with the smallest delay."""
    best: tuple[int, int] | None = None  # (round trip, offset)
    for _ in range(max(1, pings)):
        t_send = clock()
        remote = ping()
        t_recv = clock()
        rtt = t_recv - t_send
        offset = remote - (t_send + t_recv) // 2
        if best is None or rtt < best[0]:
            best = (rtt, offset)
    assert best is not None
    return ClockOffset(best[1], (best[0] + 1) // 2)


@dataclass(frozen=True, slots=True)
class ClockReport:
    """One worker's clock at the start and end of the run, and whether to trust the axis."""

    start: ClockOffset
    end: ClockOffset | None  # None: the worker was lost before the end

    @property
    def drift_ns(self) -> int:
        return abs(self.end.offset_ns - self.start.offset_ns) if self.end else 0

    @property
    def uncertain(self) -> bool:
        worst = max(self.start.uncertainty_ns, self.end.uncertainty_ns if self.end else 0)
        return worst > UNCERTAIN_NS or self.drift_ns > UNCERTAIN_NS

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start.to_json(),
            "end": self.end.to_json() if self.end else None,
            "drift_ns": self.drift_ns,
            "uncertain": self.uncertain,
        }
