"""Is an open-loop level stable? Offered vs completed rate, and whether the queue grows.

Past saturation a server's queue grows without bound, so every latency percentile
grows with the run's length: a property of the run, not of the server. The verdict:

- stable: completed >= 95 % of offered, and the queue does not grow;
- overloaded: completed < 80 % of offered, or the queue grows faster than 10 % of
  the offered rate;
- backlogged: in between.

The completed rate is taken over the completions' own span (first to last), so a
short stable level is not mistaken for a slow one: its completions are its arrivals
shifted by one latency. The queue is the server's waiting count where its /metrics
publish it, the simulator's queue length in a simulation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from inferlab.jsonrecord import JsonRecord, json_meta

Verdict = Literal["stable", "backlogged", "overloaded"]
QueueSource = Literal["server_waiting", "simulator_queue", "none"]

STABLE_COMPLETED = 0.95  # of the offered rate
OVERLOADED_COMPLETED = 0.80
OVERLOADED_QUEUE_GROWTH = 0.10  # of the offered rate, requests per second
# "Does not grow": a fitted slope within 2 % of the offered rate is noise around flat.
FLAT_QUEUE_GROWTH = 0.02
THRESHOLDS = (
    f"stable: completed >= {STABLE_COMPLETED:.0%} of offered and queue growth <= "
    f"{FLAT_QUEUE_GROWTH:.0%} of offered; overloaded: completed < {OVERLOADED_COMPLETED:.0%} "
    f"of offered or queue growth > {OVERLOADED_QUEUE_GROWTH:.0%} of offered; "
    "backlogged: in between"
)
GROWING_NOTE = (
    "overloaded: the queue grows without bound, so these latency percentiles grow with "
    "the run's length; they are not a property of the server"
)


@dataclass(frozen=True, slots=True)
class Saturation(JsonRecord):
    """The `saturation` block of an open-loop level."""

    JSON_CONSTANTS: ClassVar[dict[str, Any]] = {"thresholds": THRESHOLDS}

    verdict: Verdict
    offered_rate_per_s: float
    completed_rate_per_s: float
    # None: no queue length
    queue_growth_per_s: float | None = field(metadata=json_meta(absent=None))
    queue_source: QueueSource = field(metadata=json_meta(absent="none"))

    def to_json(self) -> dict[str, Any]:
        out = JsonRecord.to_json(self)
        if self.verdict == "overloaded":
            out["latency_note"] = GROWING_NOTE
        return out

    def describe(self) -> str:
        growth = (
            "" if self.queue_growth_per_s is None else f", queue {self.queue_growth_per_s:+.3g}/s"
        )
        return (
            f"{self.verdict}: completed {self.completed_rate_per_s:.3g}/s of "
            f"{self.offered_rate_per_s:.3g}/s offered{growth}"
        )


def verdict(offered: float, completed: float, growth: float | None) -> Verdict:
    """The thresholds of the module docstring."""
    if offered <= 0:
        return "stable"
    g = 0.0 if growth is None else growth
    if completed < OVERLOADED_COMPLETED * offered or g > OVERLOADED_QUEUE_GROWTH * offered:
        return "overloaded"
    if completed >= STABLE_COMPLETED * offered and g <= FLAT_QUEUE_GROWTH * offered:
        return "stable"
    return "backlogged"


def completed_rate_per_s(end_s: Sequence[float]) -> float:
    """Completions per second over their own span (n - 1 intervals between n completions)."""
    if len(end_s) < 2:
        return 0.0
    span = max(end_s) - min(end_s)
    return (len(end_s) - 1) / span if span > 0 else 0.0


def queue_growth_per_s(t_s: Sequence[float], queue: Sequence[float]) -> float | None:
    """The least-squares slope of queue length over time (requests per second)."""
    if len(t_s) < 2 or max(t_s) - min(t_s) <= 0:
        return None
    import numpy as np  # lazily: summary.py imports this module

    slope, _ = np.polyfit(np.asarray(t_s, dtype=float), np.asarray(queue, dtype=float), 1)
    return float(slope)


def saturation(
    offered_rate_per_s: float,
    end_s: Sequence[float],
    queue: tuple[Sequence[float], Sequence[float]] | None,
    source: QueueSource,
) -> Saturation:
    """The verdict from the offered rate, the successful completions' times, and the queue
    as (times, lengths) when known."""
    completed = completed_rate_per_s(end_s)
    growth = queue_growth_per_s(*queue) if queue is not None else None
    return Saturation(
        verdict(offered_rate_per_s, completed, growth),
        offered_rate_per_s,
        completed,
        growth,
        source if growth is not None else "none",
    )
