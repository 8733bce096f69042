"""The running set: admitted requests in admission order, with decode progress kept lazily.

Every decoding request takes part in every decode step (a step either decodes
all of them or, when an unchunked prefill runs alone, none), so a decoder's
progress is the number of decode steps since it began decoding. Nothing is
touched per decoder per step: the sum of contexts grows by the number of
decoders, the requests that finish are found in a bucket keyed by the step
they finish at, and the KV blocks that grow are counted by "block phase" (a
decoder needs a new block when its context is a multiple of the block size).
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Sequence

from inferlab.sim.kv import KVBlockManager
from inferlab.sim.request import DECODE, PREFILL, SimRequest
from inferlab.sim.steptime.base import DecodeBatch


class Running:
    def __init__(self, kv: KVBlockManager) -> None:
        self.kv = kv
        self.requests: dict[int, SimRequest] = {}  # admission order
        self.prefilling: dict[int, SimRequest] = {}  # admission order
        # The decoders as the step-time model sees them, kept up to date in place (one
        # object for the whole run: a step costs no allocation for it).
        self.decode = DecodeBatch(0, 0, self.decode_contexts)
        self.decode_steps = 0
        self.decode_end_s = array("d")  # end time of each decode step
        self.prefill_token_s = array("d")  # time of each token a finished prefill yielded
        # Read every decode step, by this class and by the engine's decode-only loop (public
        # for that loop: sim/engine.py inlines end_decode_step).
        self.block_tokens = kv.block_tokens
        self.phase = [0] * kv.block_tokens  # decoders by (context - start step) mod block
        self.finish_at: dict[int, list[SimRequest]] = {}  # decoders by the step they finish
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self.requests)

    @property
    def decoding(self) -> int:
        return self.decode.count

    @property
    def context_sum(self) -> int:
        """Tokens in context over all decoders."""
        return self.decode.context_sum

    def admit(self, r: SimRequest, cached: int = 0) -> None:
        """`r` runs from now on; a prefix cache already holds its first `cached` tokens."""
        r.prefill_target = r.prompt_tokens + r.generated
        r.prefilled = cached
        r.cached_tokens = min(cached, r.prompt_tokens)  # readmitted, it may find output too
        r.blocks = 0
        if cached:
            self._resize(r, self.kv.blocks_for(cached))
        r.admit_order = next(self._order)
        self.requests[r.id] = r
        self.prefilling[r.id] = r

    def latest(self) -> SimRequest:
        return next(reversed(self.requests.values()))

    def generated(self, r: SimRequest) -> int:
        if r.decode_from < 0:
            return r.generated
        return r.generated + self.decode_steps - r.decode_from

    def next_growth(self) -> int:
        """KV blocks the next decode step adds (decoders whose context fills a block)."""
        return self.phase[-self.decode_steps % self.kv.block_tokens] if self.decode.count else 0

    def decode_contexts(self) -> list[int]:
        return [
            r.prompt_tokens + self.generated(r)
            for r in self.requests.values()
            if r.decode_from >= 0
        ]

    def end_decode_step(self, t: float) -> Sequence[SimRequest]:
        """Every decoder got a token at `t`; returns those that reached their length."""
        d = self.decode_steps
        self.decode_end_s.append(t)
        self.kv.used_blocks += self.phase[-d % self.block_tokens]  # next_growth, inlined
        self.decode_steps = d + 1
        decode = self.decode
        decode.context_sum += decode.count
        return self.finish_at.pop(d, ())

    def end_prefill_chunks(
        self, chunks: Sequence[tuple[SimRequest, int]], t: float
    ) -> list[SimRequest]:
        """The step's prompt chunks are cached; returns the requests done with their tokens."""
        return [r for r, n in chunks if self.end_prefill_chunk(r, n, t)]

    def end_prefill_chunk(self, r: SimRequest, n: int, t: float) -> bool:
        """`n` more prompt tokens are cached; True when the request is done with its tokens."""
        r.prefilled += n
        if r.prefilled < r.prefill_target:
            self._resize(r, self.kv.blocks_for(r.prefilled))
            return False
        r.generated += 1  # the prefill pass yields the next token
        r.pieces.append((PREFILL, len(self.prefill_token_s), 1))
        self.prefill_token_s.append(t)
        del self.prefilling[r.id]
        if r.generated >= r.output_tokens:
            self._resize(r, self.kv.blocks_for(r.prompt_tokens + r.generated))
            return True
        self._start_decoding(r)
        return False

    def _resize(self, r: SimRequest, blocks: int) -> None:
        self.kv.used_blocks += blocks - r.blocks
        r.blocks = blocks

    def _start_decoding(self, r: SimRequest) -> None:
        ctx = r.prompt_tokens + r.generated
        self._resize(r, self.kv.blocks_for(ctx))
        d = self.decode_steps
        r.decode_from = d
        self.decode.count += 1
        self.decode.context_sum += ctx
        self.phase[(ctx - d) % self.kv.block_tokens] += 1
        self.finish_at.setdefault(d + r.output_tokens - r.generated - 1, []).append(r)

    def remove(self, r: SimRequest) -> None:
        """Take `r` out (finished or preempted), freeing its KV blocks."""
        del self.requests[r.id]
        if r.decode_from < 0:
            self.prefilling.pop(r.id, None)
            self.kv.used_blocks -= r.blocks
            r.blocks = 0
            return
        d, start = self.decode_steps, r.decode_from
        if d > start:
            r.pieces.append((DECODE, start, d - start))
        gen = r.generated + d - start
        ctx = r.prompt_tokens + gen
        self.decode.count -= 1
        self.decode.context_sum -= ctx
        self.phase[(ctx - d) % self.kv.block_tokens] -= 1
        bucket = self.finish_at.get(start + r.output_tokens - r.generated - 1)
        if bucket is not None and r in bucket:
            bucket.remove(r)
        self.kv.used_blocks -= self.kv.blocks_for(ctx)
        r.generated = gen
        r.decode_from = -1
        r.blocks = 0
