"""--request-timeout never cuts a request early: its deadline is taken from the clock now,
not from the loop's cached time (uvloop caches it per iteration, in whole ms)."""

from __future__ import annotations

import asyncio
import time

import pytest

from inferlab.bench.client import _deadline_after


async def _check() -> None:
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    t = time.monotonic()
    due = _deadline_after(0.3)
    assert due >= t + 0.3  # on the loop's clock, which is time.monotonic's
    assert due - loop.time() >= 0.3


@pytest.mark.parametrize("use_uvloop", [False, True])
def test_the_deadline_is_never_before_the_timeout(use_uvloop: bool) -> None:
    if use_uvloop:
        uvloop = pytest.importorskip("uvloop")
        uvloop.run(_check())
    else:
        asyncio.run(_check())
