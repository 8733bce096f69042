"""The chat-template probe: how many tokens the server's chat template adds to a chat.

Two requests to the chat API, one token each: [user A], then [user A, assistant B,
user C], texts of known token counts (/tokenize). The server's usage.prompt_tokens less
the texts' tokens is what the template added: `first` for one message (a system prompt,
the message's markers, the reply's opening), and per earlier message the rest, halved
(two earlier messages). The simulator adds them to a conversation's prompts
(load/conversations.with_template): on the bundled SmolLM2 the template was 45 % of a
3-turn chat's prompt tokens, and nothing else in the profile sees it.

A server without the chat API (an HTTP 4xx) has no template to measure: None. A server
that fails otherwise ends the profile, as every probe (ProbeError).
"""

from __future__ import annotations

from dataclasses import replace

from inferlab.bench.client import stream_request
from inferlab.profile.probes import Client, ProbeError

MESSAGE_TOKENS = (24, 16, 24)  # user A, assistant B, user C


async def _templated(c: Client, texts: list[tuple[str, int]]) -> int | None:
    """usage.prompt_tokens of a chat of these messages (user, assistant, user...)."""
    ep = replace(c.endpoint, api="chat")
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
    return rec.prompt_tokens


async def chat_template(c: Client) -> tuple[int, int] | None:
    """(tokens added to one message, tokens added per earlier message), or None."""
    texts = [await c.prompt(n) for n in MESSAGE_TOKENS]
    one = await _templated(c, texts[:1])
    three = await _templated(c, texts) if one is not None else None
    if one is None or three is None:
        return None
    first = max(one - texts[0][1], 0)
    per_message = max(round((three - sum(n for _, n in texts) - first) / 2), 0)
    return first, per_message
