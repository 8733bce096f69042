"""Bounds on what one simulation may take on, so every run finishes (or is refused at once).

The limits are flags (`--max-requests`, `--max-steps`); a load beyond them is
refused before the simulation starts, with the number, the limit and the flag
that raises it. The engine also stops at the step limit while it runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferlab.errors import InferlabError

DEFAULT_MAX_REQUESTS = 1_000_000  # about two minutes of simulation
DEFAULT_MAX_STEPS = 20_000_000  # about two minutes of simulation
MAX_BLOCK_TOKENS = 1 << 20


class SimulationTooLarge(InferlabError):
    """The load is more than the simulation is allowed to take on."""


@dataclass(frozen=True, slots=True)
class Limits:
    max_requests: int = DEFAULT_MAX_REQUESTS
    max_steps: int = DEFAULT_MAX_STEPS

    def check_requests(self, n: float, what: str) -> None:
        """`what` says where the count came from, e.g. '--rate 5/s x --duration 60s'."""
        if not n <= self.max_requests:  # also refuses NaN
            raise SimulationTooLarge(
                f"{what} = {n:.6g} requests, over the limit of {self.max_requests} "
                "(raise it with --max-requests, or simulate a smaller load)"
            )

    def check_request_steps(
        self, prompt_tokens: int, output_tokens: int, chunk: int | None
    ) -> None:
        """One request alone needs an engine step per output token (and per prompt chunk)."""
        steps = output_tokens + (math.ceil(prompt_tokens / chunk) if chunk else 1)
        if steps > self.max_steps:
            raise SimulationTooLarge(
                f"a request of {prompt_tokens} prompt and {output_tokens} output tokens needs "
                f"{steps} engine steps, over the limit of {self.max_steps} "
                "(raise it with --max-steps, or ask for fewer tokens)"
            )


def positive_finite(value: float, flag: str, example: str) -> float:
    """Refuse zero, negative, NaN and infinite values of `flag`."""
    if not (math.isfinite(value) and value > 0):
        raise InferlabError(f"{flag} must be positive and finite, e.g. {example} (got {value})")
    return value


def at_least(value: int, low: int, flag: str, high: int | None = None) -> int:
    if value < low or (high is not None and value > high):
        span = f"between {low} and {high}" if high is not None else f">= {low}"
        raise InferlabError(f"{flag} must be {span} (got {value})")
    return value
