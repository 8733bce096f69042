"""Simulated load: load/'s request specs as arrivals and users, legacy lengths, injections."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inferlab.errors import InferlabError
from inferlab.load.spec import ArrivalProcess, Requests
from inferlab.sim.users import ClosedLoop


@dataclass(frozen=True, slots=True)
class Arrival:
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    injected: bool = False
    spec: int = -1  # its row in the level's request specs (load/)


@dataclass(frozen=True, slots=True)
class Lengths:
    """A length distribution: fixed, uniform a:b, or sampled from a file of numbers."""

    low: int
    high: int
    values: tuple[int, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Lengths:
        try:
            if Path(text).is_file():
                vals = tuple(int(x) for x in Path(text).read_text(encoding="utf-8").split())
                if not vals or min(vals) < 1:
                    raise ValueError("empty file or a length below 1")
                return cls(min(vals), max(vals), vals)
            if ":" in text:
                a, b = (int(x) for x in text.split(":"))
                if a < 1 or b < a:
                    raise ValueError
                return cls(a, b)
            n = int(text)
            if n < 1:
                raise ValueError
            return cls(n, n)
        except (ValueError, OSError) as e:  # UnicodeDecodeError is a ValueError
            raise InferlabError(
                f"cannot read lengths {text!r}: write N, LOW:HIGH (at least 1) "
                "or a file of whole numbers"
            ) from e

    @property
    def mean(self) -> float:
        return sum(self.values) / len(self.values) if self.values else (self.low + self.high) / 2

    def sample(self, rng: random.Random) -> int:
        if self.values:
            return rng.choice(self.values)
        return self.low if self.low == self.high else rng.randint(self.low, self.high)


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
        raise InferlabError(
            f"cannot read --inject-prompt {text!r}: write TOKENS@TIME, e.g. 8000@2s"
        ) from e


def open_loop(
    rate_per_s: float,
    duration_s: float,
    prompt: Lengths,
    output: Lengths,
    rng: random.Random,
    arrival: ArrivalProcess = "poisson",
    gamma_shape: float = 1.0,
) -> list[Arrival]:
    """Arrivals at `rate_per_s` for `duration_s`: Poisson, or gamma (shape < 1 is burstier).

    The instants come from load.arrivals (the one place arrivals are drawn)."""
    from inferlab.load.arrivals import arrival_times

    if not 0 < gamma_shape < math.inf:
        raise InferlabError(f"--gamma-shape must be positive, e.g. 0.5 (got {gamma_shape})")
    gen = np.random.default_rng(rng.getrandbits(64))
    times = arrival_times(gen, arrival, rate_per_s, gamma_shape, duration_s=duration_s)
    return [Arrival(t, prompt.sample(rng), output.sample(rng)) for t in times.tolist()]


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


def _trace_arrival(d: Any) -> Arrival:
    a = Arrival(float(d["arrival_s"]), int(d["prompt_tokens"]), int(d["output_tokens"]))
    if not 0 <= a.arrival_s < math.inf:
        raise ValueError(f"arrival_s {a.arrival_s} is not a finite time >= 0")
    if a.prompt_tokens < 1 or a.output_tokens < 1:
        raise ValueError("prompt_tokens and output_tokens must be >= 1")
    return a


def read_trace(path: Path) -> list[Arrival]:
    """JSONL lines {"arrival_s", "prompt_tokens", "output_tokens"}."""
    out: list[Arrival] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InferlabError(f"cannot read trace {path}: {e}") from e
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(_trace_arrival(json.loads(line)))
        except (ValueError, KeyError, TypeError, OverflowError) as e:
            raise InferlabError(
                f"{path}:{i}: bad trace line ({e}); each line needs "
                "arrival_s, prompt_tokens, output_tokens"
            ) from e
    return sorted(out, key=lambda a: a.arrival_s)
