"""Typed request specs: what one level asks of a server, before any text exists.

A level's requests are held as columns (numpy arrays, one entry a request), so a
million of them cost a few arrays, not a million objects; `Requests.spec(i)` gives
one request as a `RequestSpec` where code wants a value. bench turns each spec into
text of exactly `prompt_tokens` tokens; sim turns it into a simulated request. Both
read the same columns, so the same flags give the same requests on both sides.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from inferlab.vocab import LevelKind

LoadKind = LevelKind  # one vocabulary: vocab.LevelKind
ArrivalProcess = Literal["poisson", "gamma", "constant"]
NO_ID = -1  # "none" in an integer column (no prefix group, no conversation)

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Level:
    """One load level: `value` streams (closed loop) or requests per second (open loop).

    A trace level replays its rows at their own instants; `value` is its offered rate.
    """

    kind: LoadKind
    value: float
    name: str = ""  # a worker's share keeps the whole level's label; a trace names itself

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.kind == "concurrency":
            return f"c={int(self.value)}"
        return f"rate={self.value:g}/s" if self.kind == "rate" else "trace"

    @property
    def open_loop(self) -> bool:
        """Sent at scheduled instants whatever the server does (rate and trace levels)."""
        return self.kind != "concurrency"

    @property
    def summary_kind(self) -> Literal["concurrency", "rate"]:
        """The kind a level summary states: streams, or an arrival rate."""
        return "concurrency" if self.kind == "concurrency" else "rate"


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One request as asked: lengths, when, and what it shares with others."""

    index: int  # its place in the level's sequence (0 = first measured request)
    arrival_s: float | None  # after the level's start; None: the next free closed-loop slot
    prompt_tokens: int  # the whole prompt, shared prefix included
    output_tokens: int  # forced
    prefix_blocks: tuple[int, ...] = ()  # shared blocks (group or hash ids), in order
    block_tokens: int = 0  # tokens of each shared block
    prefix_group: int | None = None  # --prefix-groups: which system prompt
    conversation_id: int | None = None
    turn: int = 0  # 0 = a conversation's first turn (or a lone request)
    think_time_s: float = 0.0  # after the previous turn's reply ends
    message_tokens: int = 0  # a conversation turn's new user message (0: not a conversation)

    @property
    def shared_tokens(self) -> int:
        """Prompt tokens made of shared blocks: the whole blocks that fit before its own text."""
        if not self.prefix_blocks or self.block_tokens <= 0:
            return 0
        return usable_blocks(self.prompt_tokens, self.block_tokens, len(self.prefix_blocks)) * (
            self.block_tokens
        )


@dataclass(frozen=True, slots=True)
class Requests:
    """A level's requests as columns; `arrival_s` is NaN for a closed-loop slot.

    `blocks` / `block_offsets` hold each request's shared blocks (request i:
    blocks[block_offsets[i]:block_offsets[i+1]]), each `block_tokens` long.
    """

    arrival_s: F64
    prompt_tokens: I64
    output_tokens: I64
    prefix_group: I64
    conversation_id: I64
    turn: I64
    think_time_s: float = 0.0
    block_tokens: int = 0
    blocks: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    block_offsets: I64 | None = None
    # Conversations: each turn's new user message (prompt_tokens holds the whole history
    # before it as well, the replies forced to their output lengths). None: no turns.
    message_tokens: I64 | None = None
    # A chat template's first tokens, the same in every conversation (its system prompt):
    # each conversation's prompt opens with them (load/conversations.with_template).
    chat_head_tokens: int = 0

    def __len__(self) -> int:
        return len(self.prompt_tokens)

    @property
    def closed_loop(self) -> bool:
        return bool(len(self) and np.isnan(self.arrival_s[0]))

    def request_blocks(self, i: int) -> tuple[int, ...]:
        if self.block_offsets is None:
            return ()
        a, b = int(self.block_offsets[i]), int(self.block_offsets[i + 1])
        return tuple(int(x) for x in self.blocks[a:b])

    def spec(self, i: int) -> RequestSpec:
        t = float(self.arrival_s[i])
        group = int(self.prefix_group[i])
        conv = int(self.conversation_id[i])
        return RequestSpec(
            index=i,
            arrival_s=None if np.isnan(t) else t,
            prompt_tokens=int(self.prompt_tokens[i]),
            output_tokens=int(self.output_tokens[i]),
            prefix_blocks=self.request_blocks(i),
            block_tokens=self.block_tokens,
            prefix_group=None if group == NO_ID else group,
            conversation_id=None if conv == NO_ID else conv,
            turn=int(self.turn[i]),
            think_time_s=self.think_time_s if int(self.turn[i]) > 0 else 0.0,
            message_tokens=0 if self.message_tokens is None else int(self.message_tokens[i]),
        )

    def __iter__(self) -> Iterator[RequestSpec]:
        return (self.spec(i) for i in range(len(self)))

    @property
    def shared_prompt_tokens(self) -> int:
        """Prompt tokens a perfect prefix cache would serve in this level: each request's
        leading whole blocks already sent by an earlier request, up to its first new one."""
        if self.block_offsets is None or self.block_tokens <= 0:
            return 0
        seen: set[int] = set()
        hits = 0
        for i in range(len(self)):
            blocks = self.request_blocks(i)
            chained = True
            for b in blocks[: usable_blocks(int(self.prompt_tokens[i]), self.block_tokens)]:
                chained = chained and b in seen
                hits += self.block_tokens if chained else 0
                seen.add(b)
        return hits

    @property
    def implied_hit_ratio(self) -> float | None:
        """Share of the level's prompt tokens a perfect prefix cache would serve; None: unshared."""
        total = int(self.prompt_tokens.sum())
        if (self.block_offsets is None and self.message_tokens is None) or not total:
            return None
        history = 0
        if self.message_tokens is not None:  # a turn's history was sent by the turn before
            history = int((self.prompt_tokens - self.message_tokens).sum())
        return (self.shared_prompt_tokens + history) / total


def usable_blocks(prompt_tokens: int, block_tokens: int, blocks: int | None = None) -> int:
    """Whole shared blocks a prompt holds, leaving at least one token of its own (a prompt
    that is all shared text cannot be made unique, nor its length exact)."""
    n = max(0, prompt_tokens - 1) // block_tokens
    return n if blocks is None else min(n, blocks)


def columns(
    arrival_s: F64,
    prompt_tokens: I64,
    output_tokens: I64,
) -> Requests:
    """Plain requests: no shared prefix, no conversation."""
    n = len(prompt_tokens)
    none = np.full(n, NO_ID, dtype=np.int64)
    return Requests(
        arrival_s=np.asarray(arrival_s, dtype=np.float64),
        prompt_tokens=np.asarray(prompt_tokens, dtype=np.int64),
        output_tokens=np.asarray(output_tokens, dtype=np.int64),
        prefix_group=none,
        conversation_id=none.copy(),
        turn=np.zeros(n, dtype=np.int64),
    )
