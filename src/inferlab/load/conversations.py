"""Conversations (--turns N --think-time T): a level's requests as multi-turn chats.

Turn k of a conversation sends the whole history (every earlier user message and
the assistant's reply) and one new user message drawn from --prompt-tokens; its reply
is forced to a length drawn from --output-tokens. So the spec's `prompt_tokens` is the
history plus the new message (the replies counted at their forced lengths) and
`message_tokens` is the new message alone. Turn k + 1 is sent T after turn k's reply
ends. Rows are conversation after conversation, turns in order. An open loop draws
each conversation's start; its later turns follow their replies (arrival NaN), as every
closed-loop turn does.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from inferlab.errors import ConfigError
from inferlab.load.spec import F64, I64, Requests, columns

MAX_TURNS = 10_000


@dataclass(frozen=True, slots=True)
class Conversation:
    turns: int
    think_time_s: float = 0.0

    def __post_init__(self) -> None:
        if not 1 <= self.turns <= MAX_TURNS:
            raise ConfigError(f"{{turns}} must be 1 to {MAX_TURNS}, e.g. 4")
        if not 0 <= self.think_time_s < math.inf:
            raise ConfigError("{think_time_s} must be a finite time >= 0, e.g. 2s")


def conversation_rows(n_conversations: int, turns: int) -> tuple[I64, I64]:
    """(conversation id, turn) of each row."""
    rows = np.arange(n_conversations * turns, dtype=np.int64)
    return rows // turns, rows % turns


def as_conversations(starts: F64 | None, message: I64, output: I64, conv: Conversation) -> Requests:
    """Rows of (message, reply) lengths as conversations; `starts`: open-loop first turns."""
    n = len(message)
    ids, turn = conversation_rows(-(-n // conv.turns), conv.turns)
    ids, turn = ids[:n], turn[:n]
    spent = np.concatenate([[0], np.cumsum(message + output)])
    first = ids * conv.turns  # the row of each request's conversation's first turn
    history = spent[np.arange(n)] - spent[first]
    arrival = np.full(n, np.nan)
    if starts is not None:
        arrival[turn == 0] = starts[: int((turn == 0).sum())]
    base = columns(arrival, history + message, output)
    return Requests(
        arrival_s=base.arrival_s,
        prompt_tokens=base.prompt_tokens,
        output_tokens=base.output_tokens,
        prefix_group=base.prefix_group,
        conversation_id=ids,
        turn=turn,
        think_time_s=conv.think_time_s,
        message_tokens=np.asarray(message, dtype=np.int64),
    )


def with_template(
    reqs: Requests, first_tokens: int, per_message_tokens: int, shared_tokens: int = 0
) -> Requests:
    """A conversation level's prompts as a chat template makes them: turn k's prompt holds
    2k earlier messages (k user messages and k replies) and the new one; the template adds
    `first_tokens` (a system prompt, the new message's markers, the reply's opening) and
    `per_message_tokens` for each earlier message. The first `shared_tokens` of them (the
    system prompt: at most `first_tokens`) open every conversation's prompt alike."""
    if reqs.message_tokens is None or not (first_tokens or per_message_tokens):
        return reqs
    extra = first_tokens + per_message_tokens * 2 * reqs.turn
    head = min(shared_tokens, first_tokens)
    return dataclasses.replace(
        reqs, prompt_tokens=reqs.prompt_tokens + extra, chat_head_tokens=head
    )
