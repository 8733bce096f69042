"""Capacity planning: the highest rate one replica sustains within an SLO, then the fleet.

Each candidate rate is a simulation; the search brackets the largest rate
whose TTFT p99 and TPOT p99 meet the SLO with every request finished.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferlab.errors import InferlabError
from inferlab.metrics.requests import latency
from inferlab.metrics.stats import summarize
from inferlab.physics.price import price_per_million
from inferlab.sim.engine import Policy, SimResult, simulate
from inferlab.sim.output import to_records
from inferlab.sim.steptime import StepTimeModel
from inferlab.sim.workload import Lengths, open_loop


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
    model: StepTimeModel,
    policy: Policy,
    rate: float,
    duration_s: float,
    prompt: Lengths,
    output: Lengths,
    seed: int,
) -> RatePoint:
    arrivals = open_loop(rate, duration_s, prompt, output, random.Random(seed))
    res: SimResult = simulate(arrivals, model, policy, max_time_s=duration_s * 3)
    lats = [x for r in to_records(res, "plan") if (x := latency(r)) is not None]
    unfinished = sum(1 for r in res.requests if r.finish_s is None)
    ttft = summarize([x.ttft_s for x in lats])["p99"] or 0.0
    tpot = summarize([x.tpot_s for x in lats if x.tpot_s])["p99"] or 0.0
    return RatePoint(rate, float(ttft), float(tpot), unfinished, res.preemptions)


def plan_fleet(
    model: StepTimeModel,
    policy: Policy,
    slo: Slo,
    target_rate: float,
    prompt: Lengths,
    output: Lengths,
    tp: int = 1,
    usd_per_gpu_hour: float | None = None,
    duration_s: float = 60.0,
    seed: int = 0,
    progress: Callable[[RatePoint], None] = lambda p: None,
) -> Plan:
    if target_rate <= 0:
        raise InferlabError("the target rate must be positive, e.g. --rate 50/s")

    def at(rate: float) -> RatePoint:
        p = evaluate(model, policy, rate, duration_s, prompt, output, seed)
        progress(p)
        points.append(p)
        return p

    points: list[RatePoint] = []
    lo_rate = 1.0 / duration_s * 5  # a handful of requests: the SLO at (almost) no load
    first = at(lo_rate)
    if first.violation(slo):
        raise InferlabError(
            f"the SLO is unreachable at any rate: even at {lo_rate:.3g} req/s one replica gives "
            f"TTFT p99 {first.ttft_p99_s:.3g} s, TPOT p99 {first.tpot_p99_s * 1e3:.3g} ms "
            f"({first.violation(slo)}); relax the SLO, add tensor parallelism or faster hardware"
        )
    lo, hi = lo_rate, lo_rate * 2
    binding = "none within the searched range"
    while hi < 1e5:  # grow until the SLO breaks
        p = at(hi)
        v = p.violation(slo)
        if v:
            binding = v
            break
        lo, hi = hi, hi * 2
    for _ in range(8):  # bisect to ~1 %
        if hi / lo < 1.01:
            break
        mid = math.sqrt(lo * hi)
        v = at(mid).violation(slo)
        if v:
            hi, binding = mid, v
        else:
            lo = mid
    replicas = max(1, math.ceil(target_rate / lo))
    gpus = replicas * tp
    usd = None
    if usd_per_gpu_hour is not None:
        out_tokens_per_s = target_rate * output.mean
        usd = price_per_million(usd_per_gpu_hour, out_tokens_per_s, gpus).usd_per_million_tokens
    return Plan(lo, binding, replicas, gpus, usd, sorted(points, key=lambda p: p.rate_per_s))


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
