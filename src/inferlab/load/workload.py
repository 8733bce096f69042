"""A workload: the parsed load flags, and the request specs each level draws from them.

Every draw of a level comes from its own seeded streams, keyed by the seed and the
level's label (not its position in a sweep): `bench --concurrency 1,4` and
`simulate --concurrency 4` give level c=4 the same requests. Each quantity has its
own stream (arrivals, prompt lengths, output lengths, prefix groups), so adding
prefix groups does not change the lengths. Warm-up requests come from separate
streams: they are extra, and the measured requests are the same with or without them.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from inferlab.errors import ConfigError
from inferlab.load.arrivals import arrival_times
from inferlab.load.conversations import Conversation, as_conversations
from inferlab.load.spec import NO_ID, ArrivalProcess, Level, Requests, columns

if TYPE_CHECKING:
    from inferlab.load.lengths import LengthDist
    from inferlab.load.traces import ShapedTrace

MEASURE, WARMUP = 0, 1  # stream families: measured requests, warm-up requests


@dataclass(frozen=True, slots=True)
class Prefix:
    """--prefix-groups G --prefix-tokens P: every prompt opens with one of G shared prompts."""

    groups: int
    tokens: int


@dataclass(frozen=True, slots=True)
class TraceLoad:
    """A trace, windowed, sped up and scaled for replay (load.traces.shape_trace)."""

    trace: ShapedTrace
    name: str  # as given to --trace


@dataclass(frozen=True, slots=True)
class Workload:
    """What every level of a run asks of the server, before any level is drawn."""

    prompt: LengthDist
    output: LengthDist
    levels: tuple[Level, ...]
    requests_per_level: int | None = None  # measured requests (open loop: or a duration)
    duration_s: float | None = None  # open loop: arrivals before this instant
    arrival: ArrivalProcess = "poisson"
    burstiness: float = 1.0  # gamma shape
    seed: int = 0
    warmup: int | None = None  # per level; None: one per stream (2 for open loop)
    prefix: Prefix | None = None
    trace: TraceLoad | None = None
    conversation: Conversation | None = None

    @classmethod
    def fixed(
        cls,
        prompt_tokens: int = 32,
        output_tokens: int = 256,
        levels: Sequence[Level] = (),
        requests_per_level: int = 64,
        warmup: int | None = None,
        seed: int = 0,
    ) -> Workload:
        """A load of fixed lengths (the demo, engine-bench, tests): every prompt and output
        exactly as long as stated."""
        from inferlab.load.lengths import LengthDist
        from inferlab.load.limits import MAX_TOKENS

        return cls(
            LengthDist.parse(str(prompt_tokens), "prompt_tokens", MAX_TOKENS),
            LengthDist.parse(str(output_tokens), "output_tokens", MAX_TOKENS),
            tuple(levels),
            requests_per_level=requests_per_level,
            seed=seed,
            warmup=warmup,
        )

    @property
    def shares_prefix(self) -> bool:
        """Prompts share text on purpose: the server's prefix cache may (should) hit."""
        return (
            self.prefix is not None
            or self.conversation is not None
            or (self.trace is not None and self.trace.trace.hash_ids is not None)
        )

    def to_json(self) -> dict[str, Any]:
        """The load as both sides state it in summary.json (workload.load)."""
        trace = "the trace's own" if self.trace is not None else None
        return {
            "prompt_tokens": trace or self.prompt.describe(),
            "output_tokens": trace or self.output.describe(),
            "arrival": self.arrival,
            "burstiness": self.burstiness,
            "seed": self.seed,
            "requests_per_level": self.requests_per_level,
            "duration_s": self.duration_s,
            "prefix_groups": self.prefix.groups if self.prefix else None,
            "prefix_tokens": self.prefix.tokens if self.prefix else None,
            "trace": self.trace.trace.describe() if self.trace else None,
            "turns": self.conversation.turns if self.conversation else None,
            "think_time_s": self.conversation.think_time_s if self.conversation else None,
        }

    def mean_tokens(self) -> tuple[int, int]:
        """The mean prompt and output lengths (a trace's own), rounded, at least 1."""
        if self.trace is not None and self.trace.trace.rows:
            tr = self.trace.trace
            prompt, output = float(np.mean(tr.prompt_tokens)), float(np.mean(tr.output_tokens))
        else:
            prompt, output = self.prompt.mean_tokens, self.output.mean_tokens
        return max(1, round(prompt)), max(1, round(output))

    def longest_tokens(self, n: int = 4096) -> tuple[int, int]:
        """The longest prompt and output among n draws: what one request may ask at most."""
        if self.trace is not None and len(self.trace.trace.prompt_tokens):
            tr = self.trace.trace
            return int(np.max(tr.prompt_tokens)), int(np.max(tr.output_tokens))
        rng = np.random.default_rng(self.seed)
        prompt = int(self.prompt.sample(rng, n).max())
        return prompt, int(self.output.sample(rng, n).max())

    def requests(self, level: Level) -> Requests:
        """The level's measured requests: the same for the same flags, wherever drawn."""
        if level.kind == "trace":
            return self._trace_requests()
        n = self._count(level)
        streams = _streams(self.seed, level.label, MEASURE)
        if self.conversation is not None:
            return self._draw_conversations(level, n, streams, self.conversation)
        return self._draw(level, n, streams)

    def warmup_requests(self, level: Level) -> Requests:
        """Extra requests sent before the measured ones; drawn apart from them."""
        n = self.warmup_count(level)
        streams = _streams(self.seed, level.label, WARMUP)
        if level.kind == "trace" and self.trace is not None:  # lengths of the trace's own rows
            tr = self.trace.trace
            rows = streams[1].integers(0, tr.rows, n)
            return columns(np.full(n, np.nan), tr.prompt_tokens[rows], tr.output_tokens[rows])
        closed = Level("concurrency", max(1.0, level.value), level.name)
        return self._draw(closed, n, streams)

    def warmup_count(self, level: Level) -> int:
        if self.warmup is not None:
            return self.warmup
        return 2 if level.open_loop else max(1, int(level.value))

    def _count(self, level: Level) -> int | None:
        if self.requests_per_level is not None:
            return self.requests_per_level
        if level.open_loop and self.duration_s is not None:
            return None
        raise ConfigError("give {requests_per_level} (or {duration_s} for {rate} levels)")

    def _draw(self, level: Level, n: int | None, streams: list[np.random.Generator]) -> Requests:
        if level.kind == "rate":
            t = arrival_times(
                streams[0], self.arrival, level.value, self.burstiness, n, self.duration_s
            )
            n = len(t)
        else:
            assert n is not None
            t = np.full(n, np.nan)
        prompt = self.prompt.sample(streams[1], n)
        output = self.output.sample(streams[2], n)
        reqs = columns(t, prompt, output)
        if self.prefix is not None:
            reqs = with_prefix_groups(reqs, self.prefix, streams[3])
        return reqs

    def _draw_conversations(
        self, level: Level, n: int | None, streams: list[np.random.Generator], conv: Conversation
    ) -> Requests:
        starts = None
        if level.kind == "rate":
            count = None if n is None else -(-n // conv.turns)
            starts = arrival_times(
                streams[0], self.arrival, level.value, self.burstiness, count, self.duration_s
            )
            n = n if n is not None else len(starts) * conv.turns
        assert n is not None
        message = self.prompt.sample(streams[1], n)
        output = self.output.sample(streams[2], n)
        return as_conversations(starts, message, output, conv)

    def _trace_requests(self) -> Requests:
        assert self.trace is not None
        tr = self.trace.trace
        reqs = columns(tr.arrival_s, tr.prompt_tokens, tr.output_tokens)
        if tr.hash_ids is None:
            return reqs
        return with_blocks(reqs, tr.hash_ids, tr.block_tokens)


def _streams(seed: int, label: str, family: int) -> list[np.random.Generator]:
    """Four independent generators for one level: arrivals, prompts, outputs, groups."""
    key = np.random.SeedSequence([seed, zlib.crc32(label.encode()), family])
    return [np.random.default_rng(s) for s in key.spawn(4)]


def with_prefix_groups(reqs: Requests, prefix: Prefix, rng: np.random.Generator) -> Requests:
    """Each request opens with one of G shared prompts of P tokens; prompts shorter than
    P + 1 tokens are raised to P + 1 (the whole prompt counts the prefix, plus one token
    of its own)."""
    n = len(reqs)
    groups = rng.integers(0, prefix.groups, n, dtype=np.int64)
    prompt = np.maximum(reqs.prompt_tokens, prefix.tokens + 1)
    return Requests(
        arrival_s=reqs.arrival_s,
        prompt_tokens=prompt,
        output_tokens=reqs.output_tokens,
        prefix_group=groups,
        conversation_id=reqs.conversation_id,
        turn=reqs.turn,
        block_tokens=prefix.tokens,
        blocks=groups.copy(),
        block_offsets=np.arange(n + 1, dtype=np.int64),
    )


def with_blocks(reqs: Requests, hash_ids: Sequence[Sequence[int]], block_tokens: int) -> Requests:
    """A trace's hash ids as shared blocks (the same id, the same text)."""
    sizes = np.array([len(h) for h in hash_ids], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    flat = np.fromiter((b for h in hash_ids for b in h), dtype=np.int64, count=int(offsets[-1]))
    return Requests(
        arrival_s=reqs.arrival_s,
        prompt_tokens=reqs.prompt_tokens,
        output_tokens=reqs.output_tokens,
        prefix_group=np.full(len(reqs), NO_ID, dtype=np.int64),
        conversation_id=reqs.conversation_id,
        turn=reqs.turn,
        block_tokens=block_tokens,
        blocks=flat,
        block_offsets=offsets,
    )
