"""Clock offsets between the driver and a worker, estimated as NTP does."""

from __future__ import annotations

import itertools

from inferlab.bench.clock import UNCERTAIN_NS, ClockOffset, ClockReport, estimate_offset


def test_offset_is_the_midpoint_of_the_best_round_trip() -> None:
    # The driver's clock ticks 0, 100, 1000, 1040, ...; the worker's clock reads 5_000 ahead.
    driver = iter([0, 100, 1_000, 1_040, 2_000, 2_400])
    worker_reads = iter([5_050, 6_020, 7_200])  # at the middle of each round trip + 5_000 ...
    off = estimate_offset(lambda: next(worker_reads), pings=3, clock=lambda: next(driver))
    # round trips: 100, 40, 400 -> the second wins: offset = 6_020 - (1_000 + 1_040) / 2
    assert off == ClockOffset(6_020 - 1_020, 20)


def test_same_host_offset_is_near_zero() -> None:
    import time

    off = estimate_offset(time.perf_counter_ns)
    assert abs(off.offset_ns) <= off.uncertainty_ns + 1_000
    assert off.to_driver(off.to_worker(123_456)) == 123_456


def test_drift_and_uncertainty_flag_the_axis() -> None:
    good = ClockReport(ClockOffset(1_000, 50_000), ClockOffset(1_200, 40_000))
    assert not good.uncertain and good.drift_ns == 200
    drifted = ClockReport(ClockOffset(0, 10), ClockOffset(UNCERTAIN_NS + 1, 10))
    assert drifted.uncertain
    slow_link = ClockReport(ClockOffset(0, UNCERTAIN_NS + 1), None)
    assert slow_link.uncertain and slow_link.to_json()["end"] is None


def test_many_pings_take_the_smallest_round_trip() -> None:
    ticks = itertools.count(0, 10)
    off = estimate_offset(lambda: 0, pings=5, clock=lambda: next(ticks))
    assert off.uncertainty_ns == 5
