"""vLLM's KV block pool as the vLLM policy keeps it: automatic prefix caching by block hash.

Read from vLLM 0.32 (v1/core/block_pool.py, kv_cache_manager.py,
single_type_kv_cache_manager.py; sim/policies/vllm.py names the release):

- a block is cached under the hash of its tokens chained to its parent's
  (kv_cache_utils.py 695-725), full blocks only: the chain keys of
  sim/prefix_cache.block_keys, over a request's prompt and then its reply;
- a lookup takes the longest run of cached blocks from the start, at most
  (tokens - 1) // block_size of them (kv_cache_manager.py 295: the last token is always
  computed again; single_type_kv_cache_manager.py 784);
- a hit on a block another request holds shares it (`touch`, block_pool.py 752-768: its
  reference count + 1): one block in memory, however many requests hold it;
- blocks are cached when they are allocated, before they are computed
  (kv_cache_manager.py 612-616): a request admitted later in the same step hits them;
- a request that leaves frees its blocks tail first (single_type_kv_cache_manager.py
  589); a cached block nobody holds joins the end of the free queue (block_pool.py
  774-803) and stays cached until the queue's head reaches it: a new block takes the
  free blocks that hold nothing first, then evicts the least recently freed
  (block_pool.py 681-689).

The KV block count (sim/kv.py, kept per request by sim/running.py) stays the blocks in
memory: the pool takes one off it for each block a second request shares and gives it
back when that request lets go. The free cached blocks fill the room beside the held
ones and are evicted, oldest first, when it shrinks (`trim`), as BlockPrefixCache does.
That count holds, from a step's end, the slot of each decoder's next token, also for a
request that has just finished (vLLM allocates it only at the next step): the room seen
as it leaves can be one block short, once in block_size requests, and a cached block
evicted a little early.
"""

from __future__ import annotations

from inferlab.sim.kv import KVBlockManager
from inferlab.sim.prefix_cache import BlockChains
from inferlab.sim.request import SimRequest


class VllmBlockPool(BlockChains):
    """Cached blocks by chain key: held (by how many running requests) or free (LRU order)."""

    def __init__(self, kv: KVBlockManager) -> None:
        super().__init__(kv)
        self.refs: dict[int, int] = {}  # key -> running requests holding its block

    def lookup(self, r: SimRequest, pending: int = 0) -> tuple[int, int]:
        """(cached blocks `r` would hit now, how many of them a running request holds):
        find_longest_cache_hit. `pending`: blocks this step allocated that the KV count
        does not hold yet (what they evicted is evicted)."""
        if r.prompt is None:
            return 0, 0
        self.trim(pending)
        keys, refs, free = self._chain(r), self.refs, self.free
        limit = min(len(keys), (r.prompt_tokens + r.generated - 1) // self.block_tokens)
        hits = held = 0
        while hits < limit:
            key = keys[hits]
            if key in refs:
                held += 1
            elif key not in free:
                break
            hits += 1
        return hits, held

    def _hold(self, keys: list[int]) -> None:
        """One more request holds the blocks of `keys`: each leaves the free queue, or is
        shared (one block in memory, taken off the KV count). Inlined: it runs for every
        block of every request."""
        refs, free = self.refs, self.free
        shared = 0
        for key in keys:
            n = refs.get(key)
            if n:
                refs[key] = n + 1
                shared += 1
            else:
                if key in free:
                    del free[key]
                refs[key] = 1
        self.kv.used_blocks -= shared

    def take(self, r: SimRequest, hits: int) -> None:
        """`r` holds its chain's first `hits` blocks (it is admitted with them)."""
        if r.prompt is None:
            return
        self._hold(self._chain(r)[:hits])
        self._taken[r.id] = hits

    def cache(self, r: SimRequest, tokens: int) -> None:
        """`r` has slots for its first `tokens`: their whole blocks are cached (vLLM caches a
        block once allocated). A block whose key another request holds is counted once."""
        taken = self._taken.get(r.id)
        if taken is None:
            return
        keys = self._chain(r)
        upto = min(len(keys), tokens // self.block_tokens)
        if upto > taken:
            self._hold(keys[taken:upto])
            self._taken[r.id] = upto

    def release(self, r: SimRequest, tokens: int, done: bool) -> None:
        """`r` left (finished or preempted) with `tokens` in KV, its blocks taken off the KV
        count: its cached ones become free, tail first; one still shared stays held, and
        in memory (counted again). `done`: it will not come back."""
        self.cache(r, tokens)
        self.trim()  # what the steps since the last trim evicted, before anything joins
        taken = self._taken.pop(r.id, 0)
        keys = self._chain(r) if taken else ()
        refs, free = self.refs, self.free
        shared = 0
        for key in reversed(keys[:taken]):
            left = refs[key] - 1
            if left:
                refs[key] = left
                shared += 1
            else:
                del refs[key]
                free[key] = None
        self.kv.used_blocks += shared
        if done:
            self._keys.pop(r.id, None)
        self.trim()

    def note_room(self, pending: int = 0) -> None:
        """Blocks are about to be let go: the room now is the least since the last trim."""
        cap = self.kv.capacity_blocks
        if cap is not None and self.room is not None:
            self.room = min(self.room, cap - self.kv.used_blocks - pending)

    def trim(self, pending: int = 0) -> None:
        """Evict free cached blocks, least recently freed first, to fit the least room since
        the last trim; the room is the present one from then on."""
        cap = self.kv.capacity_blocks
        if cap is None or self.room is None:
            return
        now = cap - self.kv.used_blocks - pending
        free = self.free
        for _ in range(len(free) - max(0, min(self.room, now))):
            free.popitem(last=False)
        self.room = now
