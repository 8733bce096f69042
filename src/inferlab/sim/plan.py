"""Capacity planning: the highest rate one replica sustains within an SLO, then the fleet.

Each candidate rate is a simulation; the search brackets the largest rate
whose TTFT p99 and TPOT p99 meet the SLO with every request finished.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferlab.errors import InferlabError
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.physics.price import price_per_million
from inferlab.sim.engine import simulate
from inferlab.sim.limits import Limits
from inferlab.sim.output import LoadLabel, summarize_result
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime import StepTimeModel
from inferlab.sim.workload import arrivals_of

MAX_RATE_PER_S = 1e5  # the search stops growing here


@dataclass(frozen=True, slots=True)
class PlanLoad:
    target_rate_per_s: float
    workload: Workload  # lengths, arrival process, seed (its levels are the searched rates)


@dataclass(frozen=True, slots=True)
class Fleet:
    tp: int = 1
    usd_per_gpu_hour: float | None = None


@dataclass(frozen=True, slots=True)
class Search:
    duration_s: float = 60.0  # simulated per candidate rate
    seed: int = 0
    limits: Limits = Limits()


@dataclass(frozen=True, slots=True)
class Slo:
    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None


@dataclass(frozen=True, slots=True)
class RatePoint:
    rate_per_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    unfinished: int
    preemptions: int

    def violation(self, slo: Slo) -> str | None:
        """The binding constraint at this rate, or None when the SLO holds."""
        if self.unfinished:
            return "throughput (queue grows without bound)"
        if slo.ttft_p99_s is not None and self.ttft_p99_s > slo.ttft_p99_s:
            return "memory (KV cache: preemptions)" if self.preemptions else "TTFT"
        if slo.tpot_p99_s is not None and self.tpot_p99_s > slo.tpot_p99_s:
            return "TPOT"
        return None


@dataclass(frozen=True, slots=True)
class Plan:
    max_rate_per_s: float
    binding: str
    replicas: int
    gpus: int
    usd_per_million_output_tokens: float | None
    points: list[RatePoint]


def evaluate(
    model: StepTimeModel, policy: Policy, rate: float, load: PlanLoad, search: Search
) -> RatePoint:
    w = dataclasses.replace(load.workload, duration_s=search.duration_s, seed=search.seed)
    arrivals = arrivals_of(w.requests(Level("rate", rate, "plan")))
    res = simulate(
        arrivals, model, policy, max_time_s=search.duration_s * 3, max_steps=search.limits.max_steps
    )
    lv = summarize_result(res, LoadLabel("plan", "rate", rate))
    unfinished = sum(1 for r in res.requests if r.finish_s is None)
    ttft = lv.ttft_s.p99 or 0.0
    tpot = lv.tpot_s.p99 or 0.0
    return RatePoint(rate, float(ttft), float(tpot), unfinished, res.preemptions)


def plan_fleet(
    model: StepTimeModel,
    policy: Policy,
    slo: Slo,
    load: PlanLoad,
    fleet: Fleet = Fleet(),
    search: Search = Search(),
    progress: Callable[[RatePoint], None] = lambda p: None,
) -> Plan:
    target = load.target_rate_per_s
    if not 0 < target < math.inf:
        raise InferlabError("the target rate must be positive, e.g. --rate 50/s")
    points: list[RatePoint] = []

    def at(rate: float) -> RatePoint:
        p = evaluate(model, policy, rate, load, search)
        progress(p)
        points.append(p)
        return p

    lo_rate = 1.0 / search.duration_s * 5  # a handful of requests: the SLO at (almost) no load
    first = at(lo_rate)
    if first.violation(slo):
        raise InferlabError(
            f"the SLO is unreachable at any rate: even at {lo_rate:.3g} req/s one replica gives "
            f"TTFT p99 {first.ttft_p99_s:.3g} s, TPOT p99 {first.tpot_p99_s * 1e3:.3g} ms "
            f"({first.violation(slo)}); relax the SLO, add tensor parallelism or faster hardware"
        )
    lo, hi, binding = _bracket(at, lo_rate, slo, search)
    for _ in range(8):  # bisect to ~1 %
        if hi / lo < 1.01:
            break
        mid = math.sqrt(lo * hi)
        v = at(mid).violation(slo)
        if v:
            hi, binding = mid, v
        else:
            lo = mid
    replicas = max(1, math.ceil(target / lo))
    gpus = replicas * fleet.tp
    usd = None
    if fleet.usd_per_gpu_hour is not None:
        out_tokens_per_s = target * load.workload.output.mean_tokens
        usd = price_per_million(
            fleet.usd_per_gpu_hour, out_tokens_per_s, gpus
        ).usd_per_million_tokens
    return Plan(lo, binding, replicas, gpus, usd, sorted(points, key=lambda p: p.rate_per_s))


def _bracket(
    at: Callable[[float], RatePoint], lo: float, slo: Slo, search: Search
) -> tuple[float, float, str]:
    """Double the rate until the SLO breaks: (last rate that held, first that broke, why)."""
    hi = lo * 2
    most = search.limits.max_requests / search.duration_s  # the largest rate one simulation takes
    while hi < MAX_RATE_PER_S:
        if hi > most:
            why = (
                f"none up to {lo:.3g} req/s: a higher rate for {search.duration_s:g} s "
                f"is over --max-requests {search.limits.max_requests}"
            )
            return lo, lo, why
        v = at(hi).violation(slo)
        if v:
            return lo, hi, v
        lo, hi = hi, hi * 2
    return lo, hi, "none within the searched range"


def plan_json(plan: Plan, target_rate: float, slo: Slo) -> dict[str, Any]:
    return {
        "target_rate_per_s": target_rate,
        "slo": {"ttft_p99_s": slo.ttft_p99_s, "tpot_p99_s": slo.tpot_p99_s},
        "max_rate_per_replica_per_s": plan.max_rate_per_s,
        "binding_constraint": plan.binding,
        "replicas": plan.replicas,
        "gpus": plan.gpus,
        "usd_per_million_output_tokens": plan.usd_per_million_output_tokens,
        "searched": [
            {
                "rate_per_s": p.rate_per_s,
                "ttft_p99_s": p.ttft_p99_s,
                "tpot_p99_s": p.tpot_p99_s,
                "unfinished": p.unfinished,
                "preemptions": p.preemptions,
            }
            for p in plan.points
        ],
    }
