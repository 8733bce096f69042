"""The chat-template probe: how many tokens the server's chat template adds to a chat.

Two requests to the chat API, one token each: [user A], then [user A, assistant B,
user C], texts of known token counts (/tokenize). The server's usage.prompt_tokens less
the texts' tokens is what the template added: `first` for one message (a system prompt,
the message's markers, the reply's opening), and per earlier message the rest, halved
(two earlier messages). The simulator adds them to a conversation's prompts
(load/conversations.with_template): on the bundled SmolLM2 the template was 45 % of a
3-turn chat's prompt tokens, and nothing else in the profile sees it.

Then how much of it every chat shares (its system prompt): three one-message chats of
different texts, cached in one slot one after another; the tokens the server reused
(timings.cache_n, or usage's cached_tokens) for the second and third, the smaller of the
two (two texts may open alike). SmolLM2: 24 of its 30 (its default system prompt and the
user's marker). Every conversation's prompt opens with them, so a new conversation finds
them in any slot that served one, and llama-server's slot choice by similarity sends it
there (sim/prefix_cache.chat_prompt).

A server without the chat API (an HTTP 4xx) has no template to measure: None. A server
that fails otherwise ends the profile, as every probe (ProbeError).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inferlab.bench.client import stream_request
from inferlab.profile.probes import Client, ProbeError
from inferlab.records import RequestRecord

MESSAGE_TOKENS = (24, 16, 24)  # user A, assistant B, user C


@dataclass(frozen=True, slots=True)
class Template:
    first: int  # tokens added to a chat's first message
    per_message: int  # tokens added per earlier message
    shared: int | None  # of `first`, those alike in every chat (None: not reported)


async def _templated(
    c: Client, texts: list[tuple[str, int]], slot: int | None = None
) -> RequestRecord | None:
    """A one-token chat of these messages (user, assistant, user...), cached in `slot`
    if one is named; None if the server has no chat API."""
    ep = replace(c.endpoint_for(cache=slot is not None, slot=slot), api="chat")
    roles = ("user", "assistant")
    history = [{"role": roles[i % 2], "content": t} for i, (t, _) in enumerate(texts[:-1])]
    rec = c.record(texts[-1][1], 1, "template")
    await stream_request(c.session, ep, rec, texts[-1][0], c.t0_ns, history)
    if rec.http_status is not None and 400 <= rec.http_status < 500:
        return None
    if not rec.ok or rec.prompt_tokens is None:
        raise ProbeError(
            f"the server failed the chat-template probe "
            f"({rec.error or f'HTTP {rec.http_status}'}); is it still running?"
        )
    return rec


async def shared_head(c: Client, first: int) -> int | None:
    """The template's tokens every chat shares: what a chat reuses of another's, cached
    in the same slot (the smaller of two tries), at most `first`."""
    reused = []
    for i in range(3):
        rec = await _templated(c, [await c.prompt(MESSAGE_TOKENS[0])], slot=0)
        hit = rec.server_cached_tokens if rec is not None else None
        if hit is None and i:  # the first only fills the slot
            return None
        reused.append(hit or 0)
    return min(*reused[1:], first)


async def chat_template(c: Client) -> Template | None:
    """What the chat template adds, or None (no chat API)."""
    texts = [await c.prompt(n) for n in MESSAGE_TOKENS]
    one = await _templated(c, texts[:1])
    three = await _templated(c, texts) if one is not None else None
    if one is None or three is None or one.prompt_tokens is None or three.prompt_tokens is None:
        return None
    first = max(one.prompt_tokens - texts[0][1], 0)
    per_message = max(round((three.prompt_tokens - sum(n for _, n in texts) - first) / 2), 0)
    return Template(first, per_message, await shared_head(c, first))
