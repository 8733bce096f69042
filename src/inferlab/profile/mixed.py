"""The mixed-step probe: D steady decoders, then a prompt of P tokens arrives.

llama-server puts the new prompt into the next step beside the decoders' tokens; that
step ends when the prompt's first token is sampled, and each decoder's token of that
step comes at the same instant. So the decoder gap that ends nearest the prompt's first
token is the step that carried the prompt: D decoders + P prompt tokens. One sample per
prompt is the median over the decoders; the observation is the median over repeats.

Each prompt gets D fresh decoders of DECODER_TOKENS tokens, left to end on their own.
The decoders are in slots 0..D-1 and the prompt in slot D: llama.cpp computes that step
as two ubatches (the D + 1 sequences' first tokens, then the prompt's rest;
specs/llamacpp_ubatches.py).
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Sequence

from inferlab.profile.probes import Client, ProbeError, summarise, wait_for, with_ubatches
from inferlab.profile.record import Observation
from inferlab.records import RequestRecord

SETTLE_EVENTS = 3  # decoder tokens before the prompt is sent (the step before is a decode)
DECODER_TOKENS = 12  # each decoder's output: the settle, the stall, a margin, then it ends


class Decoders:
    """D fresh streams for one prompt, left to end on their own: llama-server (b11434) keeps
    an HTTP thread per stream a client closed early, so cancelling them would shrink the
    server's concurrency for every later probe."""

    def __init__(self, c: Client, batch: int, prompt: int) -> None:
        self.c, self.batch, self.prompt = c, batch, prompt
        self.recs: list[RequestRecord] = []
        self.tasks: list[asyncio.Task[RequestRecord]] = []

    async def start(self) -> None:
        texts = [await self.c.prompt(self.prompt) for _ in range(self.batch)]
        self.recs = [self.c.record(n, DECODER_TOKENS, "mixed") for _, n in texts]
        self.tasks = [
            asyncio.create_task(self.c.send(t, r, slot=k))
            for k, ((t, _), r) in enumerate(zip(texts, self.recs, strict=True))
        ]

        def settled() -> bool:
            self.check()
            return all(len(r.event_ns) >= SETTLE_EVENTS for r in self.recs)

        await wait_for(settled, f"{self.batch} decoders streamed")

    async def finish(self) -> None:
        """Wait for every decoder to end (each is bounded by the client's timeouts)."""
        await asyncio.gather(*self.tasks)

    async def cancel(self) -> None:
        """On a failure only: the profile ends anyway."""
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    def check(self) -> None:
        """A decoder that failed ends the probe."""
        for t in self.tasks:
            if t.done() and not t.cancelled() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]

    def done(self) -> bool:
        self.check()
        return all(t.done() for t in self.tasks)


def stall_s(recs: Sequence[RequestRecord], first_ns: int) -> tuple[float, int]:
    """(the median over decoders of the gap ending nearest first_ns, their context sum)."""
    stalls, ctx = [], 0
    for r in recs:
        ev = r.event_ns
        j = min(range(1, len(ev)), key=lambda i: abs(ev[i] - first_ns))
        stalls.append((ev[j] - ev[j - 1]) / 1e9)
        ctx += r.prompt_tokens_target + j
    return statistics.median(stalls), ctx


async def one_prompt(c: Client, batch: int, tokens: int) -> tuple[float, int, int] | None:
    """(stall, decoders' context, prompt tokens) for one prompt arriving beside `batch`
    fresh decoders; None when a decoder ended before the prompt's step (no stall seen)."""
    text, n = await c.prompt(tokens)
    d = Decoders(c, batch, 16)
    try:
        await d.start()
        rec = await c.send(text, c.record(n, 1, "mixed"), slot=batch)
        await wait_for(d.done, "decoders finished")
    except BaseException:
        await d.cancel()
        raise
    first = rec.event_ns[0]
    if any(r.event_ns[-1] <= first for r in d.recs):
        return None
    stall, ctx = stall_s(d.recs, first)
    return stall, ctx, rec.prompt_tokens or n


async def mixed(c: Client, batch: int, prompts: Sequence[int], repeats: int) -> list[Observation]:
    """One observation per prompt length: `repeats` stalls (at most 2x tries)."""
    out = []
    for p in prompts:
        rows = []
        for _ in range(2 * repeats):
            row = await one_prompt(c, batch, p)
            if row is not None:
                rows.append(row)
            if len(rows) == repeats:
                break
        if not rows:
            raise ProbeError(f"the mixed probe at D={batch}, P={p} never saw the prompt's step")
        n = round(statistics.median(r[2] for r in rows))
        o = summarise(
            "mixed", [r[0] for r in rows], batch, round(statistics.fmean(r[1] for r in rows)), n, 0
        )
        steps = [(k, 1) for k in range(batch)] + [(batch, n)]  # decoders, then the prompt
        out.append(with_ubatches(o, steps, batch) if c.slots else o)  # vLLM: one pass
    return out
