"""The server's own step, from /metrics, over the window a decode probe measured.

llama-server counts its llama_decode calls (`llamacpp:n_decode_total`); while every
stream decodes, wall time over calls is its step. Snapshots are taken every
SAMPLE_S during the probe; the pair that brackets the most of the steady window
gives the step. A server without /metrics (or a scrape that fails) gives None: the
probe goes on from the client's gaps alone.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import aiohttp

from inferlab.servermetrics.dialects import MetricsError
from inferlab.servermetrics.scrape import fetch_snapshot
from inferlab.servermetrics.snapshot import Snapshot

SAMPLE_S = 0.1
TIMEOUT_S = 2.0


class StepSampler:
    def __init__(self, session: aiohttp.ClientSession, url: str | None) -> None:
        self.session, self.url = session, url
        self.snaps: list[Snapshot] = []

    async def _loop(self) -> None:
        assert self.url is not None
        while True:
            try:
                self.snaps.append(await fetch_snapshot(self.session, self.url, TIMEOUT_S))
            except MetricsError:
                self.url = None  # no /metrics here: stop asking
                return
            await asyncio.sleep(SAMPLE_S)

    @contextlib.asynccontextmanager
    async def sampling(self) -> AsyncIterator[StepSampler]:
        task = asyncio.create_task(self._loop()) if self.url else None
        try:
            yield self
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def step_s(self, start_s: float, end_s: float) -> float | None:
        """Seconds per llama_decode call between the first and last snapshots in the window
        (perf_counter seconds); None with fewer than two, or no call between them."""
        inside = [s for s in self.snaps if start_s <= s.t_mono_s <= end_s and s.steps is not None]
        if len(inside) < 2:
            return None
        a, b = inside[0], inside[-1]
        calls = (b.steps or 0.0) - (a.steps or 0.0)
        return (b.t_mono_s - a.t_mono_s) / calls if calls > 0 else None
