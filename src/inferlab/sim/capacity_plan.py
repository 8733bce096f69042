"""Capacity planning: the highest rate one replica sustains within an SLO, then the fleet.

Each candidate rate is a simulation judged against the SLO (slo/attainment.py) and its
saturation verdict; the search is bench's --find-max-load search (slo/search.py): the
answer is the highest rate simulated that holds the SLO with its queue not overloaded.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from inferlab.errors import ConfigError, InferlabError
from inferlab.load.spec import Level
from inferlab.physics.price import price_per_million
from inferlab.sim.simulate_level import SimConfig, simulate_probe
from inferlab.slo.attainment import ObjectiveResult, SloLevel
from inferlab.slo.grammar import Slo
from inferlab.slo.search import DEFAULT_MAX_LEVELS, MaxLoad, SearchSpec, find_max_load

MAX_RATE_PER_S = 1e5  # the search stops growing here


@dataclass(frozen=True, slots=True)
class Fleet:
    tp: int = 1
    usd_per_gpu_hour: float | None = None


@dataclass(frozen=True, slots=True)
class RatePoint:
    rate_per_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    unfinished: int
    preemptions: int
    level: SloLevel  # the simulated level against the SLO
    verdict: str  # saturation: stable, backlogged or overloaded

    def violation(self) -> str | None:
        """The binding constraint at this rate, or None when the SLO holds."""
        if self.unfinished or self.verdict == "overloaded":
            return "throughput (queue grows without bound)"
        if self.level.passed:
            return None
        name = self.level.binding.name if self.level.binding else "SLO"
        if name.startswith("ttft"):
            return "memory (KV cache: preemptions)" if self.preemptions else "TTFT"
        return "TPOT" if name.startswith("tpot") else name


@dataclass(frozen=True, slots=True)
class Plan:
    max_rate_per_s: float
    binding: str
    replicas: int
    gpus: int
    usd_per_million_output_tokens: float | None
    points: list[RatePoint]
    max_load: MaxLoad


def _throughput_fails(level: SloLevel) -> SloLevel:
    """The level as failing on throughput: the queue grew, whatever its percentiles say."""
    why = ObjectiveResult("throughput", "level", 0.0, False, 1.0)
    return replace(level, objectives=(*level.objectives, why), passed=False, binding=why)


def plan_config(cfg: SimConfig, duration_s: float) -> SimConfig:
    """Each candidate rate simulated for `duration_s` (and stopped at three times that)."""
    assert cfg.workload is not None
    w = dataclasses.replace(cfg.workload, duration_s=duration_s)
    return dataclasses.replace(cfg, workload=w, max_time_s=duration_s * 3)


def evaluate(cfg: SimConfig, rate: float) -> RatePoint:
    """One candidate rate: one simulated level, judged against the SLO and its queue."""
    sl = simulate_probe(cfg, Level("rate", rate, "plan"), f"rate={rate:g}/s")
    lv, res = sl.summary, sl.result
    assert lv.slo is not None and lv.saturation is not None  # an SLO, open loop
    unfinished = sum(1 for r in res.requests if r.finish_s is None)
    judged = lv.slo
    if unfinished or lv.saturation.verdict == "overloaded":
        judged = _throughput_fails(judged)
    ttft = lv.ttft_s.p99 or 0.0
    tpot = lv.tpot_s.p99 or 0.0
    verdict = lv.saturation.verdict
    return RatePoint(rate, float(ttft), float(tpot), unfinished, res.preemptions, judged, verdict)


def plan_fleet(
    cfg: SimConfig,
    target: float,
    fleet: Fleet = Fleet(),
    progress: Callable[[RatePoint], None] = lambda p: None,
) -> Plan:
    """The highest rate one replica sustains within the SLO (slo/search.py), then the fleet.
    `cfg` is a `plan_config`; its search's `max_levels` bounds the simulations."""
    if not 0 < target < math.inf:
        raise ConfigError("the target rate must be positive, e.g. {rate} 50/s")
    assert cfg.workload is not None
    duration = cfg.workload.duration_s or 60.0
    max_levels = cfg.search.max_levels if cfg.search else DEFAULT_MAX_LEVELS
    points: dict[float, RatePoint] = {}

    def at(rate: float) -> SloLevel:
        p = evaluate(cfg, rate)
        progress(p)
        points[rate] = p
        return p.level

    lo_rate = 1.0 / duration * 5  # a handful of requests: the SLO at (almost) no load
    most = min(MAX_RATE_PER_S, cfg.limits.max_requests / duration)
    found = find_max_load(at, SearchSpec("rate", lo_rate, most, max_levels))
    if found.value is None:
        first = points[lo_rate]
        raise InferlabError(
            f"the SLO is unreachable at any rate: even at {lo_rate:.3g} req/s one replica gives "
            f"TTFT p99 {first.ttft_p99_s:.3g} s, TPOT p99 {first.tpot_p99_s * 1e3:.3g} ms "
            f"({first.violation()}); relax the SLO, add tensor parallelism or faster hardware"
        )
    return _fleet(found, points, target, cfg.workload.output.mean_tokens, fleet)


def _fleet(
    found: MaxLoad, points: dict[float, RatePoint], target: float, out_tokens: float, fleet: Fleet
) -> Plan:
    lo = found.value
    assert lo is not None
    above = [p for r, p in points.items() if r > lo and p.violation()]
    binding = (
        min(above, key=lambda p: p.rate_per_s).violation() or ""
        if above
        else f"none up to {lo:.3g} req/s (the search's highest rate)"
    )
    replicas = max(1, math.ceil(target / lo))
    gpus = replicas * fleet.tp
    usd = None
    if fleet.usd_per_gpu_hour is not None:
        usd = price_per_million(
            fleet.usd_per_gpu_hour, target * out_tokens, gpus
        ).usd_per_million_tokens
    ordered = sorted(points.values(), key=lambda p: p.rate_per_s)
    return Plan(lo, binding, replicas, gpus, usd, ordered, found)


def plan_json(plan: Plan, target_rate: float, slo: Slo) -> dict[str, Any]:
    return {
        "target_rate_per_s": target_rate,
        "slo": {
            "text": slo.text,
            "min_attainment": slo.min_attainment,
            **{f"{o.name}_s": o.limit_s for o in slo.per_level},
        },
        "max_load": plan.max_load.to_json(),
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
                "saturation": p.verdict,
                "slo": p.level.to_json(),
            }
            for p in plan.points
        ],
    }
