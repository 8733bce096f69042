"""The mixed-step probe: D steady decoders, then a prompt of P tokens arrives.

llama-server puts the new prompt into the next step beside the decoders' tokens; that
step ends when the prompt's first token is sampled, and each decoder's token of that
step comes at the same instant. So the decoder gap that ends nearest the prompt's first
token is the step that carried the prompt: D decoders + P prompt tokens. One sample per
prompt is the median over the decoders; the observation is the median over repeats.

The decoders are started once per D and kept streaming across the prompts (restarted
if one finishes); they are cancelled at the end (the server drops a closed stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import Sequence

from inferlab.profile.probes import Client, ProbeError, summarise, wait_for
from inferlab.profile.record import Observation
from inferlab.records import RequestRecord

SETTLE_EVENTS = 3  # decoder tokens between prompts (the step before is a plain decode)


class Decoders:
    """D streams kept decoding; their records fill in as tokens arrive."""

    def __init__(self, c: Client, batch: int, prompt: int, output: int) -> None:
        self.c, self.batch, self.prompt, self.output = c, batch, prompt, output
        self.recs: list[RequestRecord] = []
        self.tasks: list[asyncio.Task[RequestRecord]] = []

    async def start(self) -> None:
        await self.stop()
        texts = [await self.c.prompt(self.prompt) for _ in range(self.batch)]
        self.recs = [self.c.record(n, self.output, "mixed") for _, n in texts]
        self.tasks = [
            asyncio.create_task(self.c.send(t, r))
            for (t, _), r in zip(texts, self.recs, strict=True)
        ]

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        for t in self.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        self.tasks = []

    def check(self) -> None:
        """A decoder that failed ends the probe; one that finished is restarted by `ready`."""
        for t in self.tasks:
            if t.done() and not t.cancelled() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]

    def counts(self) -> list[int]:
        return [len(r.event_ns) for r in self.recs]

    async def ready(self, room: int) -> None:
        """All D streaming, each with `room` tokens still to come, SETTLE_EVENTS new ones."""
        if (
            not self.tasks
            or any(t.done() for t in self.tasks)
            or any(r.max_tokens - n < room for r, n in zip(self.recs, self.counts(), strict=True))
        ):
            self.check()
            await self.start()
        before = self.counts()

        def moved() -> bool:
            self.check()
            return all(n >= b + SETTLE_EVENTS for n, b in zip(self.counts(), before, strict=True))

        await wait_for(moved, f"{self.batch} decoders streamed")


def stall_s(recs: Sequence[RequestRecord], first_ns: int) -> tuple[float, int]:
    """(the median over decoders of the gap ending nearest first_ns, their context sum)."""
    stalls, ctx = [], 0
    for r in recs:
        ev = r.event_ns
        j = min(range(1, len(ev)), key=lambda i: abs(ev[i] - first_ns))
        stalls.append((ev[j] - ev[j - 1]) / 1e9)
        ctx += r.prompt_tokens_target + j
    return statistics.median(stalls), ctx


async def one_prompt(c: Client, d: Decoders, tokens: int) -> tuple[float, int, int]:
    """(stall, decoders' context, prompt tokens) for one prompt arriving beside d."""
    text, n = await c.prompt(tokens)
    await d.ready(room=64)
    rec = await c.send(text, c.record(n, 1, "mixed"))
    first = rec.event_ns[0]

    def past() -> bool:
        d.check()
        return all(r.event_ns[-1] > first for r in d.recs)

    await wait_for(past, "decoders streamed past a mixed prompt")
    stall, ctx = stall_s(d.recs, first)
    return stall, ctx, rec.prompt_tokens or n


async def mixed(
    c: Client, batch: int, prompts: Sequence[int], repeats: int, ctx_per_slot: int
) -> list[Observation]:
    d = Decoders(c, batch, 16, max(ctx_per_slot - 32, 64))
    out = []
    t_limit = time.monotonic() + 10 * 60.0  # bounded even if every wait is near its limit
    try:
        for p in prompts:
            rows = [await one_prompt(c, d, p) for _ in range(repeats)]
            if time.monotonic() > t_limit:
                raise ProbeError("the mixed probe ran past 10 minutes; is the server overloaded?")
            out.append(
                summarise(
                    "mixed",
                    [r[0] for r in rows],
                    batch,
                    round(statistics.fmean(r[1] for r in rows)),
                    round(statistics.median(r[2] for r in rows)),
                    0,
                )
            )
    finally:
        await d.stop()
    return out
