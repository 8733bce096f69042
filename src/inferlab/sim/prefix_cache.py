"""Prefix caching, policy-neutral: which prompt tokens a server need not compute again.

A prompt's tokens are identified by runs (request.Prompt): a level's shared blocks
(--prefix-groups, a trace's `hash_ids` at --trace-block-tokens) are runs of their block
id; a conversation's text is one run that grows turn by turn (turn k + 1 holds turn k's
prompt and reply); the rest of a prompt is a run of its own. Two models use them:

- `common_prefix`: the longest common prefix of two prompts in tokens (llama.cpp's
  per-slot cache, sim/policies/llamacpp.py);
- `BlockPrefixCache`: blocks of N tokens keyed by their hash chain, as vLLM's automatic
  prefix caching: a request reuses the leading whole blocks already computed (at most
  its prompt less one token); blocks nobody holds stay cached, evicted least recently
  freed first when the KV cache needs their room.

Cached tokens are not prefilled: the step-time model sees them as each prefill chunk's
"tokens cached before it".
"""

from __future__ import annotations

from collections import OrderedDict

from inferlab.load.spec import NO_ID, Requests, usable_blocks
from inferlab.sim.kv import KVBlockManager
from inferlab.sim.request import Prompt, SimRequest


def own_run(row: int) -> int:
    """The run id of a request's own text (odd negatives: never a block id, never a chat)."""
    return -(2 * row + 1)


def chat_run(conversation: int) -> int:
    """The run id of a conversation's text (even negatives)."""
    return -(2 * conversation + 2)


TEMPLATE_RUN = chat_run(2**61)  # a chat template's head, the same in every conversation


def chat_prompt(conversation: int, tokens: int, head: int) -> Prompt:
    """A conversation's prompt: the template's shared head (if any), then its own text."""
    if 0 < head < tokens:
        return ((TEMPLATE_RUN, head), (chat_run(conversation), tokens - head))
    return ((chat_run(conversation), tokens),)


def prompt_runs(reqs: Requests) -> list[Prompt]:
    """Each request's prompt as runs: shared blocks, then its own text (or its chat's)."""
    out: list[Prompt] = []
    bt = reqs.block_tokens
    for i in range(len(reqs)):
        n = int(reqs.prompt_tokens[i])
        conv = int(reqs.conversation_id[i])
        if conv != NO_ID:
            out.append(chat_prompt(conv, n, reqs.chat_head_tokens))
            continue
        blocks = reqs.request_blocks(i)
        k = usable_blocks(n, bt, len(blocks)) if blocks and bt > 0 else 0
        out.append((*((b, bt) for b in blocks[:k]), (own_run(i), n - k * bt)))
    return out


def common_prefix(a: Prompt, b: Prompt) -> int:
    """Tokens two prompts share from their start."""
    n = 0
    for (ia, la), (ib, lb) in zip(a, b, strict=False):
        if ia != ib:
            return n
        if la != lb:
            return n + min(la, lb)
        n += la
    return n


def extended(p: Prompt, tokens: int) -> Prompt:
    """The prompt followed by `tokens` of its reply (its last run, its own or its chat's)."""
    if not tokens:
        return p
    rid, n = p[-1]
    return (*p[:-1], (rid, n + tokens))


def block_keys(p: Prompt, block_tokens: int, tokens: int) -> list[int]:
    """Hash-chain keys of the whole blocks among the first `tokens` of `p` (the key of a
    block names every token up to its end, as vLLM's block hash). A block inside one run
    is hashed as (chain, run, offset); a piece of a block, with its length as well."""
    b = block_tokens
    want = min(tokens, sum(n for _, n in p)) // b
    keys: list[int] = []
    key = fill = 0
    for rid, n in p:
        off = 0
        if fill:  # the end of a block begun by the runs before
            off = min(b - fill, n)
            key = hash((key, rid, 0, off))
            fill += off
            if fill < b:
                continue
            keys.append(key)
            fill = 0
        stop = off + (n - off) // b * b
        for o in range(off, stop, b):
            key = hash((key, rid, o))
            keys.append(key)
        if stop < n:
            key = hash((key, rid, stop, n - stop))
            fill = n - stop
        if len(keys) >= want:
            break
    del keys[want:]
    return keys


def request_chain(r: SimRequest, block_tokens: int) -> list[int]:
    """The block keys of `r`'s prompt and reply as they enter KV (the last token never
    does): what a prefix cache looks up and, as they are computed, caches."""
    assert r.prompt is not None
    total = r.prompt_tokens + r.output_tokens - 1
    return block_keys(extended(r.prompt, r.output_tokens), block_tokens, total)


class BlockChains:
    """What a prefix cache keeps beside its held blocks, for this one and vLLM's block pool
    (policies/vllm_blocks.py): the free cached blocks in LRU order, each request's chain of
    block keys and how many of its leading blocks it holds, and the room left for them."""

    def __init__(self, kv: KVBlockManager) -> None:
        self.kv = kv
        self.block_tokens = kv.block_tokens
        self.free: OrderedDict[int, None] = OrderedDict()  # cached, held by none: LRU first
        self._keys: dict[int, list[int]] = {}  # request id -> its chain (prompt + reply)
        self._taken: dict[int, int] = {}  # request id -> leading blocks of its chain held
        # The least room beside the held blocks since the last trim (None: unlimited). The
        # free blocks are trimmed to it only before they are read or added to: trimming to
        # each step's room in turn evicts what trimming once to their least does. Blocks
        # held only grow between two requests leaving, so the least room is the one just
        # before a request leaves (`note_room`), or now.
        self.room = kv.capacity_blocks

    def _chain(self, r: SimRequest) -> list[int]:
        keys = self._keys.get(r.id)
        if keys is None:
            keys = self._keys[r.id] = request_chain(r, self.block_tokens)
        return keys


class BlockPrefixCache(BlockChains):
    """Blocks by hash-chain key: held (by running requests, counted) or free (LRU order).

    The KV blocks a request holds are counted by the block manager as before; the free
    cached blocks fill the room left beside them and are evicted oldest first when it
    shrinks (`trim`). A block two running requests share is counted for each (the
    manager counts per request): the cache never holds more than vLLM's would."""

    def __init__(self, kv: KVBlockManager) -> None:
        super().__init__(kv)
        self.held: dict[int, int] = {}  # key -> running requests holding it

    def admit(self, r: SimRequest) -> int:
        """The tokens of `r` already cached (whole blocks, leaving one token to compute);
        its blocks are held from now on."""
        if r.prompt is None:
            return 0
        self.trim()
        keys = self._chain(r)
        target = r.prompt_tokens + r.generated  # what admission will ask it to compute
        limit = min(len(keys), (target - 1) // self.block_tokens)
        hits = 0
        held, free = self.held, self.free
        while hits < limit:
            key = keys[hits]
            if key in free:
                del free[key]
                held[key] = 1
            elif key in held:
                held[key] += 1
            else:
                break
            hits += 1
        self._taken[r.id] = hits
        return hits * self.block_tokens

    def computed(self, r: SimRequest, tokens: int) -> None:
        """`r` has its first `tokens` in KV: its whole blocks among them are cached."""
        taken = self._taken.get(r.id)
        if taken is None:
            return
        keys = self._chain(r)
        upto = min(len(keys), tokens // self.block_tokens)
        held, free = self.held, self.free
        for key in keys[taken:upto]:
            if key in free:
                del free[key]
                held[key] = 1
            else:
                held[key] = held.get(key, 0) + 1
        if upto > taken:
            self._taken[r.id] = upto

    def release(self, r: SimRequest, tokens: int, done: bool) -> None:
        """`r` leaves with `tokens` in KV: its blocks become free (the chain's tail first, so
        it is evicted first); `done`: it will not come back."""
        self.computed(r, tokens)
        self.trim()  # what the steps since the last trim evicted, before anything joins
        taken = self._taken.pop(r.id, 0)
        keys = self._chain(r) if taken else ()
        for key in reversed(keys[:taken]):
            left = self.held[key] - 1
            if left:
                self.held[key] = left
            else:
                del self.held[key]
                self.free[key] = None
        if done:
            self._keys.pop(r.id, None)
        self.trim()

    def note_room(self) -> None:
        """A request is about to leave: the room now is the least since the last trim."""
        if self.room is not None:
            room = self.kv.capacity_blocks - self.kv.used_blocks  # type: ignore[operator]
            if room < self.room:
                self.room = room

    def trim(self) -> None:
        """Evict free blocks, least recently freed first, to fit in the least room since the
        last trim; the room is the present one from then on."""
        cap = self.kv.capacity_blocks
        if cap is None or self.room is None:
            return
        now = cap - self.kv.used_blocks
        free = self.free
        for _ in range(len(free) - max(0, min(self.room, now))):
            free.popitem(last=False)
        self.room = now
