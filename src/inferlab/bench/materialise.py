"""Request specs (load/) -> prompts to send: exact lengths, shared blocks, the schedule.

Each spec's prompt is text of exactly its `prompt_tokens` where the server has
/tokenize. Shared blocks (a --prefix-groups system prompt, a trace's hash ids) are
the same text for the same id, made once per level, so the server's prefix cache
sees what the workload shares; the rest of each prompt is unique from its first
word on. A conversation's turn is its new message alone: the runner sends it after
the history it really had (bench/runner.py). Warm-up requests go first: in a closed
loop they take the first slots, in an open loop they are sent at the level's mean
gap before the measured schedule, which then keeps its own instants exactly
(shifted by the warm-up's span).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import aiohttp

from inferlab.bench.prompt_text import Prompt, TextSource, make_block, make_prompt
from inferlab.load.spec import Level, Requests, RequestSpec

PARALLEL = 8  # /tokenize calls in flight while prompts are made


@dataclass(frozen=True, slots=True)
class Target:
    """Where prompts are counted: the session, the server's root URL (None: its /tokenize
    is not asked, it was too slow), the model."""

    session: aiohttp.ClientSession
    root_url: str | None
    model: str
    source: TextSource = TextSource()  # --prompts FILE's words, --tokenizer FILE's counts


def mean_gap_s(level: Level, reqs: Requests) -> float:
    """The level's mean gap between arrivals (0 for a closed loop)."""
    if not level.open_loop or not len(reqs):
        return 0.0
    if level.kind == "rate":
        return 1.0 / level.value
    span = float(reqs.arrival_s[-1] - reqs.arrival_s[0])
    return span / max(1, len(reqs) - 1)


def schedule_s(level: Level, warm: Requests, reqs: Requests) -> list[float | None]:
    """When each request (warm-up first) is sent after the level's start; None: closed loop."""
    if not level.open_loop:
        return [None] * (len(warm) + len(reqs))
    gap = mean_gap_s(level, reqs)
    start = float(reqs.arrival_s[0]) if len(reqs) else 0.0
    shift = gap * len(warm) - (start if level.kind == "trace" else 0.0)
    warm_at: list[float | None] = [gap * i for i in range(len(warm))]
    return warm_at + [shift + t for t in reqs.arrival_s.tolist()]


async def _blocks(target: Target, specs: list[RequestSpec], salt: int) -> dict[int, str]:
    """The text of every shared block the specs use, made once each, salted with the
    level's seed: a later level or repeat shares prefixes only within itself (the same
    trace replayed again would otherwise be served from the cache the first one filled)."""
    sizes = {b: s.block_tokens for s in specs for b in s.prefix_blocks[: _usable(s)]}
    sem = asyncio.Semaphore(PARALLEL)

    async def one(key: int, tokens: int) -> tuple[int, str]:
        async with sem:
            return key, await make_block(
                target.session,
                target.root_url,
                target.model,
                tokens,
                key,
                target.source.local,
                salt,
            )

    return dict(await asyncio.gather(*(one(k, n) for k, n in sizes.items())))


def _usable(s: RequestSpec) -> int:
    """Whole shared blocks at the start of the prompt (see load.spec.usable_blocks)."""
    return s.shared_tokens // s.block_tokens if s.block_tokens else 0


async def make_level_prompts(
    target: Target, level: Level, warm: Requests, reqs: Requests, seed: int
) -> list[Prompt]:
    """Every request of the level, warm-up first, as prompts ready to send."""
    specs = [*warm, *reqs]
    at = schedule_s(level, warm, reqs)
    texts = await _blocks(target, specs, seed)
    sem = asyncio.Semaphore(PARALLEL)

    async def one(i: int, s: RequestSpec) -> Prompt:
        shared = " ".join(texts[b] for b in s.prefix_blocks[: _usable(s)])
        own = s.message_tokens or s.prompt_tokens  # a turn's text is its new message
        async with sem:
            p = await make_prompt(
                target.session,
                target.root_url,
                target.model,
                own,
                seed + i,
                shared,
                target.source,
            )
        return Prompt(
            p.text,
            p.tokens,
            index=i,
            target_tokens=s.prompt_tokens,
            max_tokens=s.output_tokens,
            at_s=at[i],
            prefix_group=s.prefix_group,
            conversation_id=s.conversation_id,
            turn=s.turn,
            think_s=s.think_time_s,
        )

    return list(await asyncio.gather(*(one(i, s) for i, s in enumerate(specs))))
