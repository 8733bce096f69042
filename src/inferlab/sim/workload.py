"""Simulated load: closed-loop users, Poisson or gamma arrivals, traces, injected requests."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from inferlab.errors import InferlabError


@dataclass(frozen=True, slots=True)
class Arrival:
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    injected: bool = False


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
                vals = tuple(int(x) for x in Path(text).read_text().split())
                if not vals:
                    raise ValueError("empty file")
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
        except ValueError as e:
            raise InferlabError(
                f"cannot read lengths {text!r}: write N, LOW:HIGH or a file of numbers"
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
        return Arrival(parse_time(at), int(tokens), output_tokens, injected=True)
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
    arrival: str = "poisson",
    gamma_shape: float = 1.0,
) -> list[Arrival]:
    """Arrivals at `rate_per_s` for `duration_s`: Poisson, or gamma (shape < 1 is burstier)."""
    if rate_per_s <= 0:
        raise InferlabError("the request rate must be positive, e.g. --rate 5/s")
    out: list[Arrival] = []
    t = 0.0
    while True:
        if arrival == "gamma":
            t += rng.gammavariate(gamma_shape, 1.0 / (rate_per_s * gamma_shape))
        else:
            t += rng.expovariate(rate_per_s)
        if t >= duration_s:
            return out
        out.append(Arrival(t, prompt.sample(rng), output.sample(rng)))


def read_trace(path: Path) -> list[Arrival]:
    """JSONL lines {"arrival_s", "prompt_tokens", "output_tokens"}."""
    out: list[Arrival] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise InferlabError(f"trace {path}: not a text file (byte {e.start} is not UTF-8)") from e
    except OSError as e:
        raise InferlabError(f"cannot read trace {path}: {e}") from e
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            arrival = Arrival(
                float(d["arrival_s"]), int(d["prompt_tokens"]), int(d["output_tokens"])
            )
            if not (math.isfinite(arrival.arrival_s) and arrival.arrival_s >= 0):
                raise ValueError("arrival_s must be a finite time >= 0")
            if arrival.prompt_tokens < 1 or arrival.output_tokens < 1:
                raise ValueError("token counts must be at least 1")
            out.append(arrival)
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as e:
            raise InferlabError(
                f"{path}:{i}: bad trace line ({e}); each line needs "
                "arrival_s, prompt_tokens, output_tokens"
            ) from e
    return sorted(out, key=lambda a: a.arrival_s)
