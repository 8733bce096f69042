"""What a card is: its inputs, the expected answer (with its unit), the usual mistakes' values.

The kind modules build cards (kinds.py lists them); `numbers` holds the card's
figures already formatted, for the question and derivation templates in strings.py.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Quantity:
    value: float
    unit: str  # the unit it is stated in: "ms", "tok/s", "%", "FLOP/B", "$", "x", ...

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit}


@dataclass(frozen=True, slots=True)
class Alternate:
    """The same answer in another form, e.g. a ceiling as 4.78 ms per token or 209 tok/s."""

    quantity: Quantity
    inverse: bool  # inversely proportional to the answer (time per token vs rate)


@dataclass(frozen=True, slots=True)
class Mistake:
    name: str  # an id; strings.py says it in words
    value: float  # what the mistake gives, in the answer's unit


@dataclass(frozen=True, slots=True)
class Inputs:
    """Every number a card states; a kind fills the ones it uses."""

    seed: int
    target: str | None = None  # which quantity the card asks for, when a kind asks several
    model: str | None = None
    weight_dtype: str | None = None
    weight_bytes: float | None = None
    params: float | None = None
    kv_bytes_per_token: float | None = None
    hardware: str | None = None
    bandwidth_bytes_per_s: float | None = None  # per device
    peak_flops_per_s: float | None = None  # per device
    memory_bytes: float | None = None  # per device
    tp: int | None = None
    batch: int | None = None
    context_tokens: int | None = None
    prompt_tokens: int | None = None
    streams: int | None = None
    measured_step_time_s: float | None = None
    claimed_tokens_per_s: float | None = None
    gpu_util: float | None = None
    power_share: float | None = None  # power draw as a share of its cap
    usd_per_gpu_hour: float | None = None
    tokens_per_s: float | None = None
    gpus: int | None = None
    parts: tuple[tuple[float, float], ...] | None = None  # (fraction, speedup)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True, slots=True)
class Card:
    kind: str
    inputs: Inputs
    answer: Quantity
    verb_argv: tuple[str, ...]  # the verb that computes the answer, with the card's inputs
    alternates: tuple[Alternate, ...] = ()
    mistakes: tuple[Mistake, ...] = ()
    numbers: dict[str, str] = field(default_factory=dict)  # formatted figures for the texts
    verdict: str | None = None  # a strings.py key for a yes/no conclusion, if any

    @property
    def seed(self) -> int:
        return self.inputs.seed


def mistakes(answer: float, *candidates: tuple[str, float | None]) -> tuple[Mistake, ...]:
    """Keep the mistakes a grader can tell apart: >20 % from the answer and from each other."""
    kept: list[Mistake] = []
    for name, value in candidates:
        if value is None or not math.isfinite(value) or value <= 0:
            continue
        if abs(value - answer) <= 0.2 * abs(answer):
            continue
        if any(abs(value - m.value) <= 0.05 * m.value for m in kept):
            continue
        kept.append(Mistake(name, value))
    return tuple(kept)
