"""llama-server's slots as the simulator keeps them: each slot's cached prompt, and the
host-memory prompt cache idle slots save to and load from (server-task.cpp 1722-1878 at
the pinned build; sim/policies/llamacpp.py says how the scheduler uses them)."""

from __future__ import annotations

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
    """The host-memory prompt cache (server-task.cpp 1722-1878), its limit in tokens."""

    def __init__(self, limit_tokens: int = RAM_TOKENS) -> None:
        self.states: list[Prompt] = []  # oldest first
        self.limit_tokens = limit_tokens
        self.tokens = 0

    def save(self, p: Prompt | None) -> None:
        """alloc: a slot's prompt joins, unless held whole; what it holds whole leaves."""
        if not p:
            return
        n = tokens_of(p)
        if any(common_prefix(q, p) == n for q in self.states):
            return
        self.states = [q for q in self.states if common_prefix(q, p) != tokens_of(q)]
        self.states.append(p)
        self.tokens = sum(tokens_of(q) for q in self.states)
        while self.tokens > self.limit_tokens:
            self.tokens -= tokens_of(self.states.pop(0))

    def load(self, slot: Prompt | None, new: Prompt) -> Prompt | None:
        """The slot's prompt after the cache offers a better one (it leaves the cache)."""
        lcp, held, n_new = common_prefix(slot, new) if slot else 0, tokens_of(slot), tokens_of(new)
        keep_best = lcp / held if held else -1.0
        sim_best = lcp / n_new
        best = -1
        for i, q in enumerate(self.states):
            cur = common_prefix(q, new)
            keep, sim = cur / tokens_of(q), cur / n_new
            if keep >= 0.25 and keep_best < keep and sim_best < sim:
                keep_best, sim_best, best = keep, sim, i
        if best < 0:
            return slot
        self.tokens -= tokens_of(self.states[best])
        return self.states.pop(best)
