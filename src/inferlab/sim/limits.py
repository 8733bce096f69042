"""Bounds on what one simulation may take on, so every run finishes (or is refused at once).

The limits are flags (`--max-requests`, `--max-steps`); a load beyond them is
refused before the simulation starts, with the number, the limit and the flag
that raises it. The engine also stops at the step limit while it runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferlab.errors import ConfigError

DEFAULT_MAX_REQUESTS = 1_000_000  # about two minutes of simulation
DEFAULT_MAX_STEPS = 20_000_000  # about two minutes of simulation
MAX_BLOCK_TOKENS = 1 << 20


class SimulationTooLarge(ConfigError):
    """The load is more than the simulation is allowed to take on."""


@dataclass(frozen=True, slots=True)
class Limits:
    max_requests: int = DEFAULT_MAX_REQUESTS
    max_steps: int = DEFAULT_MAX_STEPS

    def check_requests(self, n: float, what: str) -> None:
        """`what` says where the count came from, its config fields in braces, e.g.
        '{rate} 5/s x {duration_s} 60s' (errors.ConfigError)."""
        if not n <= self.max_requests:  # also refuses NaN
            raise SimulationTooLarge(
                f"{what} = {n:.6g} requests, over the limit of {self.max_requests} "
                "(raise it with {max_requests}, or simulate a smaller load)"
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
                "(raise it with {max_steps}, or ask for fewer tokens)"
            )


def positive_finite(value: float, field: str, example: str) -> float:
    """Refuse zero, negative, NaN and infinite values of the config `field`."""
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{{{field}}} must be positive and finite, e.g. {example} (got {value})")
    return value


def at_least(value: int, low: int, field: str, high: int | None = None) -> int:
    """`value` of the config `field`, refused (ConfigError) outside [low, high]."""
    if value < low or (high is not None and value > high):
        span = f"between {low} and {high}" if high is not None else f">= {low}"
        raise ConfigError(f"{{{field}}} must be {span} (got {value})")
    return value
