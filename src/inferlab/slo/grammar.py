"""`--slo ttft=500ms,tpot=50ms,ttft_p99=1s`: per-request and level objectives, typed.

A bare metric (`ttft=500ms`) is a per-request objective: each request must meet it,
and the level needs `--min-attainment` of its requests to meet every one. A metric
with a percentile (`ttft_p99=1s`) is a level objective: that percentile over the
level's successful requests must be within it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from inferlab.errors import ConfigError, UnitError, literal
from inferlab.units import parse_duration

Metric = Literal["ttft", "tpot", "e2e", "itl_max", "ttfo"]
Percentile = Literal["p50", "p90", "p95", "p99", "p999"]
METRICS: tuple[Metric, ...] = get_args(Metric)
PERCENTILES: tuple[Percentile, ...] = get_args(Percentile)
PERCENTILE_Q: dict[Percentile, float] = {
    "p50": 50.0,
    "p90": 90.0,
    "p95": 95.0,
    "p99": 99.0,
    "p999": 99.9,
}
DEFAULT_MIN_ATTAINMENT = 0.9
# What each metric is, for the one line that lists them.
MEANING: dict[Metric, str] = {
    "ttft": "first generated token, reasoning included",
    "tpot": "per output token after the first",
    "e2e": "whole request",
    "itl_max": "the request's worst gap between stream chunks",
    "ttfo": "first non-reasoning token",
}


class SloUnitError(ConfigError, UnitError):
    """A limit of the SLO without its unit: a unit error, worded as the flag that set it."""


@dataclass(frozen=True, slots=True)
class RequestObjective:
    """Every request within `limit_s` on `metric` (e.g. ttft=500ms)."""

    metric: Metric
    limit_s: float

    @property
    def name(self) -> str:
        return self.metric


@dataclass(frozen=True, slots=True)
class LevelObjective:
    """The level's `percentile` of `metric` within `limit_s` (e.g. ttft_p99=1s)."""

    metric: Metric
    percentile: Percentile
    limit_s: float

    @property
    def name(self) -> str:
        return f"{self.metric}_{self.percentile}"


Objective = RequestObjective | LevelObjective


@dataclass(frozen=True, slots=True)
class Slo:
    """A whole SLO, as written and as objectives."""

    text: str
    per_request: tuple[RequestObjective, ...]
    per_level: tuple[LevelObjective, ...]
    min_attainment: float = DEFAULT_MIN_ATTAINMENT

    @property
    def objectives(self) -> tuple[Objective, ...]:
        return (*self.per_request, *self.per_level)


def accepted() -> str:
    """The objectives one may write, in one line."""
    bare = ", ".join(METRICS)
    return (
        f"per request: {bare}; per level: a metric with a percentile "
        f"({', '.join(PERCENTILES)}), e.g. ttft_p99=1s, tpot_p90=40ms"
    )


def _objective(key: str) -> tuple[Metric, Percentile | None]:
    for metric in METRICS:
        if key == metric:
            return metric, None
        for pct in PERCENTILES:
            if key == f"{metric}_{pct}":
                return metric, pct
    raise ConfigError(
        f"{{slo}}: unknown objective {literal(repr(key))}; accepted: {literal(accepted())}"
    )


def _limit(key: str, value: str) -> float:
    try:
        seconds = parse_duration(value)
    except UnitError:
        raise SloUnitError(
            f"{{slo}} {literal(f'{key}={value}')}: {literal(key)} is a time and needs a unit "
            "(ns, us, ms, s, min, h), e.g. 500ms, 1.5s or 2min"
        ) from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ConfigError(
            f"{{slo}} {literal(f'{key}={value}')}: give a positive finite time, e.g. 500ms"
        )
    return seconds


def parse_slo(text: str, min_attainment: float = DEFAULT_MIN_ATTAINMENT) -> Slo:
    """'ttft=500ms,tpot_p99=50ms' -> Slo; a mistake raises one line naming what is accepted."""
    if not 0 < min_attainment <= 1:
        raise ConfigError(f"{{min_attainment}} {min_attainment:g}: give a fraction in (0, 1]")
    per_request: list[RequestObjective] = []
    per_level: list[LevelObjective] = []
    seen: set[str] = set()
    for part in (p.strip() for p in text.split(",")):
        key, eq, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq or not key or not value:
            raise ConfigError(
                f"{{slo}}: cannot read {literal(repr(part))}; write NAME=TIME pairs, "
                "e.g. ttft=500ms,tpot_p99=50ms"
            )
        metric, pct = _objective(key)
        if key in seen:
            raise ConfigError(f"{{slo}}: {literal(key)} is given twice")
        seen.add(key)
        limit = _limit(key, value)
        if pct is None:
            per_request.append(RequestObjective(metric, limit))
        else:
            per_level.append(LevelObjective(metric, pct, limit))
    return Slo(text, tuple(per_request), tuple(per_level), min_attainment)
