"""Closed-loop users: each sends its next request the moment its previous one finishes."""

from __future__ import annotations

import itertools
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

    @property
    def total_requests(self) -> int:
        return self.users * self.requests_per_user


class ClosedLoopUsers:
    """Hands out each user's first request, then one follow-up per finished request."""

    def __init__(self, loop: ClosedLoop, ids: itertools.count[int]) -> None:
        self.loop = loop
        self._ids = ids
        self._sent = [0] * loop.users

    def _request(self, user: int, t: float) -> SimRequest:
        self._sent[user] += 1
        lp = self.loop
        return SimRequest(next(self._ids), t, lp.prompt_tokens, lp.output_tokens, user=user)

    def first_requests(self) -> list[SimRequest]:
        n = self.loop.users
        return [self._request(u, self.loop.stagger_s * u / n) for u in range(n)]

    def follow_up(self, done: SimRequest, t: float) -> SimRequest | None:
        """The user's next request, sent at `t`, or None when it has sent them all."""
        u = done.user
        if u is None or self._sent[u] >= self.loop.requests_per_user:
            return None
        return self._request(u, t)
