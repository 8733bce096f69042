"""Closed-loop users: each sends its next request the moment its previous one finishes."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from inferlab.sim.request import SimRequest


@dataclass(frozen=True, slots=True)
class ClosedLoop:
    users: int
    requests_per_user: int = 1
    prompt_tokens: int = 32
    output_tokens: int = 256
    # Spread the first requests evenly over this window: a real closed loop
    # drifts out of step, so its prefills land among other users' decodes.
    stagger_s: float = 0.0
    # Each request's lengths in sending order (load/'s specs), shared by all users as bench's
    # closed loop shares its queue: a user that finishes takes the next. Empty: every user
    # sends requests_per_user of the fixed lengths above.
    prompts: Sequence[int] = ()
    outputs: Sequence[int] = ()

    @property
    def total_requests(self) -> int:
        return len(self.prompts) if self.prompts else self.users * self.requests_per_user


class ClosedLoopUsers:
    """Hands out each user's first request, then one follow-up per finished request."""

    def __init__(self, loop: ClosedLoop, ids: itertools.count[int]) -> None:
        self.loop = loop
        self._ids = ids
        self._sent = [0] * loop.users
        self._next = 0  # the shared queue's next request (loop.prompts)

    def _request(self, user: int, t: float) -> SimRequest:
        self._sent[user] += 1
        lp = self.loop
        if lp.prompts:
            i = self._next
            self._next += 1
            return SimRequest(next(self._ids), t, lp.prompts[i], lp.outputs[i], user=user, spec=i)
        return SimRequest(next(self._ids), t, lp.prompt_tokens, lp.output_tokens, user=user)

    def first_requests(self) -> list[SimRequest]:
        n = self.loop.users
        if self.loop.prompts:
            n = min(n, len(self.loop.prompts))
        return [self._request(u, self.loop.stagger_s * u / n) for u in range(n)]

    def follow_up(self, done: SimRequest, t: float) -> SimRequest | None:
        """The user's next request, sent at `t`, or None when it has sent them all."""
        u = done.user
        if u is None:
            return None
        if self.loop.prompts:
            return self._request(u, t) if self._next < len(self.loop.prompts) else None
        if self._sent[u] >= self.loop.requests_per_user:
            return None
        return self._request(u, t)


@dataclass(frozen=True, slots=True)
class Chats:
    """Conversations (load/conversations.py): rows in conversation order, turns in order.

    Turn k + 1 arrives `think_time_s` after turn k finishes. With `users`, each user runs
    one conversation after another (closed loop); without, each conversation starts at its
    own instant in `starts` (open loop)."""

    prompts: Sequence[int]  # the whole prompt of each turn (history + new message)
    outputs: Sequence[int]
    conversation: Sequence[int]
    think_time_s: float = 0.0
    users: int | None = None
    starts: Sequence[float] = ()  # open loop: each conversation's first turn
    stagger_s: float = 0.0

    @property
    def total_requests(self) -> int:
        return len(self.prompts)


class ChatUsers:
    """Hands out each conversation's first turn, then its next turn after each reply."""

    def __init__(self, chats: Chats, ids: itertools.count[int]) -> None:
        self.chats = chats
        self._ids = ids
        conv = chats.conversation
        self._firsts = [i for i in range(len(conv)) if i == 0 or conv[i] != conv[i - 1]]
        self._taken = 0  # conversations started
        self._row: dict[int, int] = {}  # request id -> its row

    def _send(self, row: int, t: float, user: int | None) -> SimRequest:
        c = self.chats
        r = SimRequest(next(self._ids), t, c.prompts[row], c.outputs[row], user=user, spec=row)
        self._row[r.id] = row
        return r

    def _next_conversation(self, t: float, user: int | None) -> SimRequest:
        row = self._firsts[self._taken]
        self._taken += 1
        return self._send(row, t, user)

    def first_requests(self) -> list[SimRequest]:
        c = self.chats
        if c.users is None:
            return [self._next_conversation(t, None) for t in c.starts[: len(self._firsts)]]
        n = min(c.users, len(self._firsts))
        return [self._next_conversation(c.stagger_s * u / n, u) for u in range(n)]

    def follow_up(self, done: SimRequest, t: float) -> SimRequest | None:
        """The conversation's next turn (after the think time), else the user's next one."""
        row = self._row.pop(done.id, None)
        if row is None:
            return None
        c = self.chats
        nxt = row + 1
        if nxt < len(c.conversation) and c.conversation[nxt] == c.conversation[row]:
            return self._send(nxt, t + c.think_time_s, done.user)
        if c.users is not None and self._taken < len(self._firsts):
            return self._next_conversation(t, done.user)
        return None
