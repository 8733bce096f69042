"""Prompts of an exact token count, unique per request from the first token on.

Unique prompts mean no request hits another's prefix cache (llama-server picks
a slot by prefix similarity and reuses its cache). The count is checked with
the server's /tokenize when it has one, and later against usage.prompt_tokens.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import aiohttp

from inferlab.httpbody import (
    QUERY_DEADLINE_S,
    AnswerTooSlow,
    read_bounded,
    tokenize_limit_bytes,
)

# Common English words, each one or two BPE tokens with a leading space.
_TEXT = """
time year people way day man thing woman life child world school state family student group
country problem hand part place case week company system program question work government
number night point home water room mother area money story fact month lot right study book
eye job word business issue side kind head house service friend father power hour game line
end member law car city community name president team minute idea kid body information back
parent face others level office door health person art war history party result change
morning reason research girl guy moment air teacher force education foot boy age policy
music market sense nation plan college interest death experience effect class control care
field development role effort rate heart drug show leader light voice wife police mind price
report decision son view relationship town road arm difference value building action model
season society tax director position player record paper space ground form event official
matter center couple site project activity star table need court oil situation cost industry
figure street image phone data picture practice piece land product doctor wall patient
worker news test movie north love support technology step baby computer type attention film
tree source organization hair window evidence population river apple garden bridge mountain
ocean island forest valley desert
"""
_WORDS = _TEXT.split()


@dataclass(frozen=True, slots=True)
class Prompt:
    """One request ready to send: its text, and what its spec (load/) asked of it."""

    text: str
    tokens: int | None  # counted by the server's /tokenize; None when it has none
    index: int = 0  # its place in the level (warm-up first): request id = level's first + index
    target_tokens: int = 0  # the spec's prompt length
    max_tokens: int = 0  # the spec's forced output length (0: the run's default)
    at_s: float | None = None  # open loop: send this long after the level's start
    prefix_group: int | None = None
    conversation_id: int | None = None
    turn: int = 0
    think_s: float = 0.0  # a conversation's later turn: sent this long after the last reply

    @property
    def sha1(self) -> str:
        return prompt_sha1(self.text)


def prompt_sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def _words(rng: random.Random, n: int, corpus: Sequence[str] = ()) -> list[str]:
    """n words: common English words at random, or a run of a corpus (--prompts FILE) from a
    random place in it, wrapping round: real text, read in order."""
    if not corpus:
        return [rng.choice(_WORDS) for _ in range(n)]
    start = rng.randrange(len(corpus))
    return [corpus[(start + i) % len(corpus)] for i in range(n)]


class LocalCounter(Protocol):
    """Counts tokens without the server (specs/vocab_bpe.py: the model's own vocabulary)."""

    def count(self, text: str) -> int: ...


@dataclass(frozen=True, slots=True)
class TextSource:
    """Where a prompt's words come from (--prompts FILE's, else common words) and what
    counts them where the server has no /tokenize (--tokenizer FILE)."""

    corpus: tuple[str, ...] = ()
    local: LocalCounter | None = None


async def count_tokens(
    session: aiohttp.ClientSession,
    root_url: str | None,
    model: str,
    text: str,
    local: LocalCounter | None = None,
) -> int | None:
    """Token count from /tokenize at `root_url` (llama.cpp: content, vLLM: prompt; None: the
    server is not asked), else from `local` (bench --tokenizer); None when neither can say."""
    n = None
    if root_url is not None:
        try:
            n = await server_count(session, root_url, model, text)
        except AnswerTooSlow:
            n = None
    return local.count(text) if n is None and local is not None else n


async def server_count(
    session: aiohttp.ClientSession,
    root_url: str,
    model: str,
    text: str,
    deadline_s: float = QUERY_DEADLINE_S,
) -> int | None:
    """/tokenize's count of `text`, None where it has none; AnswerTooSlow past deadline_s."""
    url = f"{root_url}/tokenize"
    body = {"content": text, "prompt": text, "model": model}
    try:
        async with session.post(
            url, json=body, timeout=aiohttp.ClientTimeout(total=deadline_s)
        ) as r:
            if r.status != 200:
                return None
            d = json.loads(await read_bounded(r, tokenize_limit_bytes(text)))
    except TimeoutError as e:
        raise AnswerTooSlow(url, deadline_s) from e
    except (aiohttp.ClientError, ValueError):
        return None
    if isinstance(d, dict):
        if isinstance(d.get("count"), int):
            return int(d["count"])
        if isinstance(d.get("tokens"), list):
            return len(d["tokens"])
    return None


def _unique_head(seed: int) -> list[str]:
    """A unique opening: the seed's digits in base len(_WORDS), fastest-varying first."""
    base = len(_WORDS)
    return [_WORDS[(seed // base**i) % base] for i in range(3)]


async def make_prompt(
    session: aiohttp.ClientSession,
    root_url: str | None,
    model: str,
    target: int,
    seed: int,
    shared: str = "",
    source: TextSource = TextSource(),
) -> Prompt:
    """Words until /tokenize says `target` tokens; the first words differ per seed.

    `shared` (text shared with other requests, e.g. a system prompt) opens the prompt
    unchanged; only the unique rest after it is adjusted to make the count exact.
    `source`: the words' text (--prompts FILE) and a local counter (--tokenizer FILE).
    """
    corpus, local = source.corpus, source.local
    rng = random.Random(seed)
    fixed = shared + " " if shared else ""
    shared_n = len(shared.split())
    head = _unique_head(seed)
    words = head + _words(rng, max(target - shared_n - len(head), 0), corpus)
    words = words[: max(target - shared_n, 1)]
    n = await count_tokens(session, root_url, model, fixed + " ".join(words), local)
    if n is None:
        return Prompt(fixed + " ".join(words), None)
    for _ in range(12):
        if n == target:
            break
        if n > target:
            words = words[: max(1, len(words) - max(1, (n - target) // 2))]
        else:
            words += _words(rng, max(1, (target - n) // 2), corpus)
        n = await count_tokens(session, root_url, model, fixed + " ".join(words), local)
        if n is None:
            break
    return Prompt(fixed + " ".join(words), n)


async def make_block(
    session: aiohttp.ClientSession,
    root_url: str | None,
    model: str,
    tokens: int,
    key: int,
    local: LocalCounter | None = None,
    salt: int | None = None,
) -> str:
    """The shared text of one block (a prefix group or a trace hash id): `tokens` tokens
    where /tokenize answers, the same words for the same key (and `salt`) wherever it is
    asked. bench salts a level's blocks with the level's own seed, so that a later level or
    repeat shares its prefixes within itself, never with what an earlier one left cached."""
    rng = random.Random(f"block-{key}" if salt is None else f"block-{salt}-{key}")
    words = ["system", *(rng.choice(_WORDS) for _ in range(max(tokens - 1, 0)))][: max(tokens, 1)]
    n = await count_tokens(session, root_url, model, " ".join(words), local)
    for _ in range(12):
        if n is None or n == tokens:
            break
        if n > tokens:
            words = words[: max(1, len(words) - max(1, (n - tokens) // 2))]
        else:
            words += [rng.choice(_WORDS) for _ in range(max(1, (tokens - n) // 2))]
        n = await count_tokens(session, root_url, model, " ".join(words), local)
    return " ".join(words)
