"""The event-loop lag sampler: it sees a blocked loop, and it backs off when nothing flows."""

from __future__ import annotations

import asyncio
import time

from inferlab.bench import lag
from inferlab.bench.client import SOCKET_READS
from inferlab.bench.lag import LagMonitor, lag_p99_s


def test_a_blocked_loop_shows_up_as_lag() -> None:
    async def main() -> list[float]:
        with LagMonitor() as m:
            await asyncio.sleep(0.3)
            time.sleep(0.6)  # a callback that holds the loop for 600 ms
            await asyncio.sleep(0.3)
        return m.lags

    lags = asyncio.run(main())
    # A sample falls due during the block (the longest period is 250 ms) and fires when it
    # ends: at least 600 - 250 ms late. (How much later depends on the machine: no bound.)
    assert max(lags) >= 0.6 - lag.IDLE_PERIOD_S
    assert lag_p99_s(lags) >= 0.6 - lag.IDLE_PERIOD_S  # few samples: the max is the p99


def test_the_period_follows_what_the_loop_is_doing() -> None:
    m = LagMonitor()
    m._reads = SOCKET_READS.n
    assert m._period_s() == lag.IDLE_PERIOD_S  # no socket read since the last sample
    SOCKET_READS.n += 1
    assert m._period_s() == lag.FLOWING_PERIOD_S  # tokens arrived, the loop was on time
    assert m._period_s() == lag.IDLE_PERIOD_S  # and none since
    m.lags.append(0.002)
    assert m._period_s() == lag.BUSY_PERIOD_S  # the last sample was late: look closer
    m.lags.append(0.0)
    assert m._period_s() == lag.IDLE_PERIOD_S
