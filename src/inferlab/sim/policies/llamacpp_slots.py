"""llama-server's slots as the simulator keeps them: each slot's cached prompt, and the
host-memory prompt cache idle slots save to and load from (server-task.cpp 1722-1878 at
the pinned build; sim/policies/llamacpp.py says how the scheduler uses them)."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass

from inferlab.sim.prefix_cache import common_prefix
from inferlab.sim.request import Prompt, SimRequest


@dataclass(slots=True)
class Slot:
    """One of the server's slots: the request it serves and the prompt its KV holds."""

    id: int
    request: SimRequest | None = None
    prompt: Prompt | None = None  # its cached tokens' identity; None: nothing shareable
    last_used_s: float = -1.0  # t_last_used: when it was last released


def tokens_of(p: Prompt | None) -> int:
    return sum(n for _, n in p) if p else 0


# --cache-ram's 8192 MiB default (common.h 638) in tokens of the bundled SmolLM2-135M's
# KV (30 layers x 3 KV heads x 64 x 2 (K, V) x 2 bytes = 23,040 bytes a token). The
# server's limit is in bytes (server-task.cpp 1881-1890: oldest entries go first).
RAM_TOKENS = 8192 * 2**20 // 23_040


class PromptRam:
    """The host-memory prompt cache (server-task.cpp 1722-1878), its limit in tokens.

    Prompts that share no first token share nothing, so entries are found by their first
    run: a long run does not compare every new prompt with every entry."""

    def __init__(self, limit_tokens: int = RAM_TOKENS) -> None:
        self.limit_tokens = limit_tokens
        self.tokens = 0
        self._entries: OrderedDict[int, Prompt] = OrderedDict()  # oldest first
        self._by_head: dict[int, list[int]] = {}  # first run id -> entries
        self._ids = itertools.count()

    @property
    def states(self) -> list[Prompt]:
        return list(self._entries.values())

    def _near(self, p: Prompt) -> list[int]:
        return self._by_head.get(p[0][0], [])

    def _drop(self, e: int) -> Prompt:
        q = self._entries.pop(e)
        self._by_head[q[0][0]].remove(e)
        self.tokens -= tokens_of(q)
        return q

    def save(self, p: Prompt | None) -> None:
        """alloc: a slot's prompt joins, unless held whole; what it holds whole leaves."""
        if not p:
            return
        n, near = tokens_of(p), self._near(p)
        if any(common_prefix(self._entries[e], p) == n for e in near):
            return
        for e in [
            e for e in near if common_prefix(self._entries[e], p) == tokens_of(self._entries[e])
        ]:
            self._drop(e)
        e = next(self._ids)
        self._entries[e] = p
        self._by_head.setdefault(p[0][0], []).append(e)
        self.tokens += n
        while self.tokens > self.limit_tokens:
            self._drop(next(iter(self._entries)))

    def load(self, slot: Prompt | None, new: Prompt) -> Prompt | None:
        """The slot's prompt after the cache offers a better one (it leaves the cache)."""
        lcp, held, n_new = common_prefix(slot, new) if slot else 0, tokens_of(slot), tokens_of(new)
        keep_best = lcp / held if held else -1.0
        sim_best = lcp / n_new
        best = -1
        for e in self._near(new):
            q = self._entries[e]
            cur = common_prefix(q, new)
            keep, sim = cur / tokens_of(q), cur / n_new
            if keep >= 0.25 and keep_best < keep and sim_best < sim:
                keep_best, sim_best, best = keep, sim, e
        return slot if best < 0 else self._drop(best)
