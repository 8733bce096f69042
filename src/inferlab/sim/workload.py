"""Simulated load: closed-loop users, Poisson or gamma arrivals, traces, injected requests."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab.errors import InferlabError

MAX_ARRIVALS = 100_000_000  # a hard stop for generated loads; the CLI's --max-requests is lower


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
    arrival: str = "poisson",
    gamma_shape: float = 1.0,
) -> list[Arrival]:
    """Arrivals at `rate_per_s` for `duration_s`: Poisson, or gamma (shape < 1 is burstier)."""
    if not 0 < rate_per_s < math.inf:
        raise InferlabError("the request rate must be positive and finite, e.g. --rate 5/s")
    expected = rate_per_s * duration_s
    if not 0 < expected < MAX_ARRIVALS:
        raise InferlabError(
            f"--rate x --duration must give between 0 and {MAX_ARRIVALS:.0e} requests "
            f"(got {expected:.3g})"
        )
    if not 0 < gamma_shape < math.inf:
        raise InferlabError(f"--gamma-shape must be positive, e.g. 0.5 (got {gamma_shape})")
    out: list[Arrival] = []
    t = 0.0
    # Bounded even if the draws underflow to zero (a tiny gamma shape): far past the mean.
    most = int(4 * expected) + 1000
    while len(out) <= most:
        if arrival == "gamma":
            t += rng.gammavariate(gamma_shape, 1.0 / (rate_per_s * gamma_shape))
        else:
            t += rng.expovariate(rate_per_s)
        if t >= duration_s:
            return out
        out.append(Arrival(t, prompt.sample(rng), output.sample(rng)))
    raise InferlabError(
        f"the arrivals did not reach --duration {duration_s:g} s after {most} requests; "
        "use a larger --gamma-shape"
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
