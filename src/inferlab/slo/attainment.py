"""One level against an SLO: attainment, goodput, pass or fail, and the binding objective.

Attainment is given in both conventions: over every measured request, a failed
request counting as a violation (the default, as AIPerf and guidellm count it), and
over successful requests only (as vLLM's --goodput counts it). A request is *good*
when it succeeded and met every per-request objective. Request goodput is good
requests per second of the level's window, token goodput their output tokens per second.

A level passes when every level objective holds and, if there are per-request
objectives, at least `min_attainment` of its requests are good.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from inferlab.jsonrecord import Count, JsonRecord, json_meta
from inferlab.slo.grammar import (
    PERCENTILE_Q,
    LevelObjective,
    RequestObjective,
    Slo,
)
from inferlab.slo.outcome import Outcome
from inferlab.units import fmt_duration

Kind = Literal["request", "level"]
OVERALL = "attainment"  # every per-request objective at once (no limit of its own)


@dataclass(frozen=True, slots=True)
class ObjectiveResult(JsonRecord):
    """One objective at one level.

    `margin` > 0 fails, <= 0 holds; it is relative (0.04: 4 % over the limit, or 4 % of
    the attainment short of --min-attainment), so objectives compare with one another.
    """

    name: str
    kind: Kind
    limit_s: float
    holds: bool
    # inf: an objective with no data (null in JSON)
    margin: float = field(metadata=json_meta(inf_null=True, absent=math.inf))
    # level objectives: the measured percentile
    value_s: float | None = field(default=None, metadata=json_meta(absent=None))
    # request objectives: failed requests count as misses
    attainment: float | None = field(default=None, metadata=json_meta(absent=None))
    # over successful requests only
    attainment_successful: float | None = field(default=None, metadata=json_meta(absent=None))

    def describe(self, min_attainment: float) -> str:
        """'tpot_p99: 52 ms > 50 ms' or 'tpot=50ms: 81 % of requests within it < 90 %'."""
        if self.kind == "level":
            if self.value_s is None:
                return f"{self.name}: no successful request to measure"
            sign = "<=" if self.holds else ">"
            return f"{self.name}: {fmt_duration(self.value_s)} {sign} {fmt_duration(self.limit_s)}"
        sign = ">=" if self.holds else "<"
        att = self.attainment or 0.0
        if self.name == OVERALL:
            return (
                f"every objective at once: {att:.0%} of requests within all "
                f"{sign} {min_attainment:.0%}"
            )
        return (
            f"{self.name}={fmt_duration(self.limit_s)}: {att:.0%} of requests within it "
            f"{sign} {min_attainment:.0%}"
        )


@dataclass(frozen=True, slots=True)
class SloLevel(JsonRecord):
    """A level judged against an SLO: the `slo` block of summary.json."""

    JSON_CONSTANTS: ClassVar[dict[str, Any]] = {
        "convention": "attainment counts failed requests as violations; "
        "attainment_successful is over successful requests only (vLLM)"
    }

    slo: str
    min_attainment: float
    requests: Count
    requests_ok: Count
    requests_good: Count
    attainment: float  # good / measured; failed requests count as violations
    attainment_successful: float | None = field(metadata=json_meta(absent=None))  # good / ok (vLLM)
    goodput_requests_per_s: float
    goodput_tokens_per_s: float
    window_s: float
    objectives: tuple[ObjectiveResult, ...]
    passed: bool = field(metadata=json_meta(key="pass"))
    # the worst objective (failing) or the tightest (passing)
    binding: ObjectiveResult | None = field(
        metadata=json_meta(key="binding_objective", absent=None)
    )

    @property
    def margin(self) -> float:
        """The largest margin of any objective: <= 0 when the level passes."""
        return max((o.margin for o in self.objectives), default=-1.0)


def meets(o: Outcome, objective: RequestObjective) -> bool:
    """A failed request meets nothing; a metric that does not apply (one token) holds."""
    if not o.ok:
        return False
    v = o.value(objective.metric)
    return v is None or v <= objective.limit_s


def _request_result(
    objective: RequestObjective, outs: list[Outcome], min_attainment: float
) -> ObjectiveResult:
    met = sum(1 for o in outs if meets(o, objective))
    n_ok = sum(1 for o in outs if o.ok)
    att = met / len(outs) if outs else 0.0
    margin = (min_attainment - att) / min_attainment
    return ObjectiveResult(
        objective.name,
        "request",
        objective.limit_s,
        att >= min_attainment,
        margin,
        attainment=att,
        attainment_successful=met / n_ok if n_ok else None,
    )


def _level_result(objective: LevelObjective, outs: list[Outcome]) -> ObjectiveResult:
    values = [v for o in outs if o.ok and (v := o.value(objective.metric)) is not None]
    if not values:
        return ObjectiveResult(objective.name, "level", objective.limit_s, False, math.inf)
    import numpy as np  # lazily: summary.py imports this module, `floor` must start fast

    q = PERCENTILE_Q[objective.percentile]
    value = float(np.percentile(np.asarray(values, dtype=float), q))  # as the level's stats
    margin = value / objective.limit_s - 1.0
    return ObjectiveResult(
        objective.name, "level", objective.limit_s, value <= objective.limit_s, margin, value
    )


def window_s(outs: list[Outcome]) -> float:
    """First send to last token of the successful requests (as the level's throughput)."""
    ok = [o for o in outs if o.ok]
    if not ok:
        return 0.0
    return max(max(o.end_s for o in ok) - min(o.send_s for o in ok), 1e-9)


def _overall(slo: Slo, good: int, n: int) -> ObjectiveResult:
    """Every per-request objective at once: the level's own attainment."""
    att = good / n if n else 0.0
    margin = (slo.min_attainment - att) / slo.min_attainment
    return ObjectiveResult(
        OVERALL, "request", 0.0, att >= slo.min_attainment, margin, attainment=att
    )


def evaluate(slo: Slo, outs: list[Outcome]) -> SloLevel:
    """Judge one level's measured requests against `slo`."""
    results: list[ObjectiveResult] = []
    for objective in slo.objectives:
        if isinstance(objective, RequestObjective):
            results.append(_request_result(objective, outs, slo.min_attainment))
        else:
            results.append(_level_result(objective, outs))
    good = [o for o in outs if o.ok and all(meets(o, x) for x in slo.per_request)]
    n_ok = sum(1 for o in outs if o.ok)
    if len(slo.per_request) > 1:  # each may hold while together they miss
        results.append(_overall(slo, len(good), len(outs)))
    win = window_s(outs)
    binding = max(results, key=lambda r: r.margin, default=None)
    return SloLevel(
        slo=slo.text,
        min_attainment=slo.min_attainment,
        requests=len(outs),
        requests_ok=n_ok,
        requests_good=len(good),
        attainment=len(good) / len(outs) if outs else 0.0,
        attainment_successful=len(good) / n_ok if n_ok else None,
        goodput_requests_per_s=len(good) / win if win else 0.0,
        goodput_tokens_per_s=sum(o.output_tokens for o in good) / win if win else 0.0,
        window_s=win,
        objectives=tuple(results),
        passed=all(r.holds for r in results),
        binding=binding,
    )
