"""What every policy here shares: admit from the head of the queue while the KV cache has
room, run waiting prompts (whole, or in chunks beside the decodes), and preempt the
latest-admitted request when the decoders' next tokens would overflow the cache.

A policy says only how many requests may run now (`admission_limit`) and how
many prompt tokens a step may carry beside the decodes (`chunk_tokens`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Protocol

from inferlab.sim.prefix_cache import BlockPrefixCache
from inferlab.sim.request import SimRequest
from inferlab.sim.running import Running
from inferlab.sim.scheduler import DECODE_ONLY, Batch, Policy


class ReleasesBlocks(Protocol):
    """A prefix cache that takes back a leaving request's blocks (BlockPrefixCache, and
    vLLM's block pool)."""

    def release(self, r: SimRequest, tokens: int, done: bool) -> None: ...


def requeue(
    victim: SimRequest,
    running: Running,
    waiting: deque[SimRequest],
    cache: ReleasesBlocks | None,
) -> None:
    """Preempt `victim` by recompute: out of the running batch, its KV dropped (what it
    computed stays cached, where a cache is on, until evicted), back at the front of the
    queue to compute its prompt and output again."""
    prefilling = victim.decode_from < 0
    running.remove(victim)
    if cache is not None:
        kv = victim.prefilled if prefilling else victim.prompt_tokens + victim.generated - 1
        cache.release(victim, kv, done=False)
    victim.prefilled = 0
    victim.preemptions += 1
    waiting.appendleft(victim)


class BatchScheduler:
    chunk_tokens: int | None = None  # None: a prompt is prefilled whole, in a step of its own
    # Whether every arrival of an instant is seen before a step starts (a server that drains
    # its task queue before each step); False: a step starts on the instant's first arrival.
    drains_queue = False
    # Whether the requests a client sends at one instant reach one step together (its
    # loop starts a step a few ms after the first: llama-server), or the first alone wakes
    # it (vLLM's engine, behind its API process): engine.burst_seen
    burst_together = False
    forms_every_step = False  # True: even a decode-only step is formed by `_form`

    def __init__(self, policy: Policy) -> None:
        self.max_batch = policy.max_batch
        self.preemptions = 0
        self.prefix: BlockPrefixCache | None = None  # on when requests carry prompt ids

    @property
    def repeats_decode_only(self) -> bool:
        """Whether `next_batch` answers DECODE_ONLY, and changes nothing, whenever nothing waits,
        nothing is prefilling and the cache has room for every decoder's next block. The
        engine then runs such steps without asking (sim/engine.py's decode-only loop); a
        policy that forms those steps itself, or overrides `next_batch`, says False."""
        return not self.forms_every_step

    def track_prefixes(self, running: Running) -> None:
        """Requests carry their prompts' identity: reuse cached blocks (sim/prefix_cache.py)."""
        self.prefix = BlockPrefixCache(running.kv)

    def after_prefill(self, chunks: Sequence[tuple[SimRequest, int]]) -> None:
        """A step's prompt chunks are computed (prefix tracking only): their blocks are cached."""
        prefix = self.prefix
        assert prefix is not None
        for r, _ in chunks:
            prefix.computed(r, r.prefilled)

    def leaving(self) -> None:
        """A request is about to leave (prefix tracking only): the room is at its least."""
        assert self.prefix is not None
        self.prefix.note_room()

    def finished(self, r: SimRequest, t: float) -> None:
        """`r` finished at `t` and left (prefix tracking only): its blocks stay cached, free."""
        assert self.prefix is not None
        self.prefix.release(r, r.prompt_tokens + r.generated - 1, done=True)

    def admission_limit(self, running: Running) -> int:
        """How many requests may be running once this step's admissions are done."""
        raise NotImplementedError

    def next_batch(self, waiting: deque[SimRequest], running: Running) -> Batch | None:
        if waiting:
            self._admit(waiting, running)
        if not running.requests:
            return None
        # Most steps have no prompt to prefill and room for every decoder's next block:
        # they are answered here, without forming a batch or looking for a victim.
        forms = running.prefilling or self.forms_every_step
        batch = self._form(running) if forms else DECODE_ONLY
        cap = running.kv.capacity_blocks
        if cap is None or running.kv.used_blocks + running.decode.count <= cap:
            return batch  # room even if every decoder needs a new block
        return self._preempt_for_growth(batch, waiting, running)

    def _admit(self, waiting: deque[SimRequest], running: Running) -> None:
        limit = self.admission_limit(running)
        kv = running.kv
        held = running.requests
        while waiting and len(held) < limit:
            r = waiting[0]
            tokens = r.prompt_tokens + r.generated + 1
            kv.check_can_ever_hold(tokens, r.prompt_tokens + r.output_tokens)
            if not kv.fits(kv.blocks_for(tokens)):
                return
            waiting.popleft()
            running.admit(r, self.prefix.admit(r) if self.prefix is not None else 0)

    def _form(self, running: Running) -> Batch:
        pending = running.prefilling.values()
        if self.chunk_tokens:
            budget = self.chunk_tokens
            chunks = []
            for r in pending:
                if budget <= 0:
                    break
                n = min(budget, r.prefill_target - r.prefilled)
                chunks.append((r, n))
                budget -= n
            return Batch(tuple(chunks), True) if chunks else DECODE_ONLY
        if pending:  # an unchunked prefill runs alone: every stream waits for it
            return Batch(tuple((r, r.prefill_target - r.prefilled) for r in pending), False)
        return DECODE_ONLY

    def _preempt_for_growth(
        self, batch: Batch, waiting: deque[SimRequest], running: Running
    ) -> Batch:
        cap = running.kv.capacity_blocks
        assert cap is not None  # next_batch comes here only when the cache may overflow
        while len(running.requests) > 1:
            grow = running.next_growth() if batch.decodes else 0
            if running.kv.used_blocks + grow <= cap:
                return batch
            victim = running.latest()
            if self.prefix is not None:
                self.prefix.note_room()
            requeue(victim, running, waiting, self.prefix)
            self.preemptions += 1
            if any(r is victim for r, _ in batch.chunks):
                chunks = tuple(c for c in batch.chunks if c[0] is not victim)
                if not chunks and not batch.decodes:  # its prompt was all the step had
                    return self._preempt_for_growth(DECODE_ONLY, waiting, running)
                batch = Batch(chunks, batch.decodes)
        return batch
