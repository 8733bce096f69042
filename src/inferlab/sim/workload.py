"""Simulated load: load/'s request specs as arrivals and closed-loop users, and injections."""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferlab.errors import ConfigError, InferlabError, literal
from inferlab.load.spec import Requests
from inferlab.sim.users import ClosedLoop


@dataclass(frozen=True, slots=True)
class Arrival:
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    injected: bool = False
    spec: int = -1  # its row in the level's request specs (load/)


def parse_inject(text: str, output_tokens: int) -> Arrival:
    """'8000@2s' -> an 8,000-token prompt arriving at t = 2 s."""
    from inferlab.units import parse_time

    try:
        tokens, at = text.split("@")
        a = Arrival(parse_time(at), int(tokens), output_tokens, injected=True)
        if a.prompt_tokens < 1 or not 0 <= a.arrival_s < math.inf:
            raise ValueError("tokens >= 1 and a finite time >= 0")
        return a
    except (ValueError, InferlabError) as e:
        raise ConfigError(
            f"cannot read {{injected}} {literal(repr(text))}: write TOKENS@TIME, e.g. 8000@2s"
        ) from e


def arrivals_of(reqs: Requests) -> list[Arrival]:
    """A level's open-loop request specs as simulated arrivals."""
    return [
        Arrival(t, p, o, spec=i)
        for i, (t, p, o) in enumerate(
            zip(
                reqs.arrival_s.tolist(),
                reqs.prompt_tokens.tolist(),
                reqs.output_tokens.tolist(),
                strict=True,
            )
        )
    ]


def closed_loop_of(reqs: Requests, users: int, stagger_s: float = 0.0) -> ClosedLoop:
    """A level's closed-loop request specs as `users` users sharing one queue."""
    return ClosedLoop(
        users,
        stagger_s=stagger_s,
        prompts=reqs.prompt_tokens.tolist(),
        outputs=reqs.output_tokens.tolist(),
    )
