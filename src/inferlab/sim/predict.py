"""Predict a load level before measuring it: the engine's own step times, llama-server's scheduler.

`predict(model, knobs, level)` runs the simulator with the llama.cpp policy
(sim/policies/llamacpp.py) and the step time fitted to an engine-bench result
(sim/steptime_engine.py), and returns a typed `Prediction` of the numbers a bench
level reports: TTFT p50/p99, TPOT p50, aggregate tok/s. A level is a closed loop
of c users, a Poisson rate, or a trace of (arrival_s, prompt, output).

`measure_overhead` is the one constant a served run may add: the serving overhead
per step, the median over the chosen levels of (served TPOT p50 - predicted TPOT
p50 with no overhead).

A closed loop's users start together, as bench's do; with forced output lengths
they stay in step, every round's prompts prefilled in one step (a llama.cpp sweep
here measured TTFT p50 2.3 s at c=16, 32-token prompts at 188 tok/s: the prompts of
all 16 users in one step, not one prompt among the others' decodes).
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from dataclasses import dataclass
from typing import Any, Literal

from inferlab.errors import InferlabError
from inferlab.sim.engine import simulate
from inferlab.sim.output import LoadLabel, summarize_result
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.sim.steptime_engine import EngineStepTime
from inferlab.sim.users import ClosedLoop
from inferlab.sim.workload import Arrival, Lengths, open_loop
from inferlab.summary import LevelSummary, RunSummary

LevelKind = Literal["concurrency", "rate", "trace"]


@dataclass(frozen=True, slots=True)
class ClosedLevel:
    concurrency: int
    prompt_tokens: int
    output_tokens: int
    requests: int  # in all, as bench's --requests-per-level


@dataclass(frozen=True, slots=True)
class PoissonLevel:
    rate_per_s: float
    prompt_tokens: int
    output_tokens: int
    duration_s: float
    seed: int = 0


@dataclass(frozen=True, slots=True)
class TraceLevel:
    arrivals: tuple[tuple[float, int, int], ...]  # (arrival_s, prompt tokens, output tokens)


Level = ClosedLevel | PoissonLevel | TraceLevel


@dataclass(frozen=True, slots=True)
class Quantiles:
    p50: float | None
    p99: float | None = None

    def to_json(self) -> dict[str, float | None]:
        return {"p50": self.p50, "p99": self.p99}


@dataclass(frozen=True, slots=True)
class Prediction:
    """What a level is predicted to measure, and from what."""

    ttft_s: Quantiles
    tpot_s: Quantiles  # p50 only
    tokens_per_s: float
    source: str  # "engine baseline DIR, llama.cpp policy, --parallel 4, overhead ..."

    def errors(self, measured: LevelSummary) -> PredictionErrors:
        """(predicted - measured) / measured of each number, None where either is missing."""
        return PredictionErrors(
            _rel(self.ttft_s.p50, measured.ttft_s.p50),
            _rel(self.ttft_s.p99, measured.ttft_s.p99),
            _rel(self.tpot_s.p50, measured.tpot_s.p50),
            _rel(self.tokens_per_s, measured.output_tokens_per_s_total),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "ttft_s": self.ttft_s.to_json(),
            "tpot_s": {"p50": self.tpot_s.p50},
            "tokens_per_s": self.tokens_per_s,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class PredictionErrors:
    """Relative errors of a prediction against the level measured (+ = predicted higher)."""

    ttft_p50_rel: float | None
    ttft_p99_rel: float | None
    tpot_p50_rel: float | None
    tokens_per_s_rel: float | None


def _rel(pred: float | None, meas: float | None) -> float | None:
    return (pred - meas) / meas if pred is not None and meas else None


def _load(
    model: EngineStepTime, level: Level
) -> tuple[list[Arrival], ClosedLoop | None, LoadLabel]:
    if isinstance(level, ClosedLevel):
        c = level.concurrency
        if c < 1 or level.requests < 1:
            raise InferlabError("a closed-loop level needs concurrency >= 1 and requests >= 1")
        per_user = math.ceil(level.requests / c)
        loop = ClosedLoop(c, per_user, level.prompt_tokens, level.output_tokens)
        return [], loop, LoadLabel(f"c={c}", "concurrency", float(c))
    if isinstance(level, PoissonLevel):
        rng = random.Random(level.seed)
        p, o = (
            Lengths(level.prompt_tokens, level.prompt_tokens),
            Lengths(level.output_tokens, level.output_tokens),
        )
        arrivals = open_loop(level.rate_per_s, level.duration_s, p, o, rng)
        return arrivals, None, LoadLabel(f"rate={level.rate_per_s:g}/s", "rate", level.rate_per_s)
    arrivals = [Arrival(t, p, o) for t, p, o in sorted(level.arrivals)]
    if not arrivals:
        raise InferlabError("a trace level needs at least one request")
    return arrivals, None, LoadLabel("trace", "rate", 0.0)


def predict(
    model: EngineStepTime, knobs: LlamaCppKnobs, level: Level, source: str = ""
) -> Prediction:
    """Simulate `level` on llama-server's scheduler with the engine's step times."""
    arrivals, users, label = _load(model, level)
    res = simulate(arrivals, model, knobs.policy(), users)
    lv = summarize_result(res, label)
    over = model.serving_overhead_s
    what = source or (
        f"{model.fit.gguf}, {model.fit.threads} thread(s); llama.cpp policy, "
        f"--parallel {knobs.parallel}; serving overhead {over * 1e3:.2f} ms/step"
    )
    return Prediction(
        Quantiles(lv.ttft_s.p50, lv.ttft_s.p99),
        Quantiles(lv.tpot_s.p50),
        lv.output_tokens_per_s_total,
        what,
    )


def closed_levels(
    summary: RunSummary, labels: list[str] | None = None
) -> list[tuple[LevelSummary, ClosedLevel]]:
    """The closed-loop levels of a bench run, each with the level that predicts it."""
    w = summary.workload
    out = []
    for lv in summary.levels:
        if lv.concurrency is None or (labels and lv.label not in labels):
            continue
        c = int(lv.concurrency)
        level = ClosedLevel(
            c, int(w.prompt_tokens), int(w.output_tokens), max(lv.requests_measured, c)
        )
        out.append((lv, level))
    return out


def run_levels(summary: RunSummary) -> list[tuple[LevelSummary, Level]]:
    """Every level of a bench run that can be predicted: closed loops, and Poisson rates
    (a fresh draw of arrivals at the run's rate, over as many requests as it measured)."""
    w = summary.workload
    closed = dict((lv.label, level) for lv, level in closed_levels(summary))
    out: list[tuple[LevelSummary, Level]] = []
    for lv in summary.levels:
        if lv.label in closed:
            out.append((lv, closed[lv.label]))
        elif lv.rate_per_s:
            n = max(lv.requests_measured, 1)
            level = PoissonLevel(
                lv.rate_per_s, int(w.prompt_tokens), int(w.output_tokens), n / lv.rate_per_s
            )
            out.append((lv, level))
    return out


def measure_overhead(
    model: EngineStepTime, knobs: LlamaCppKnobs, summary: RunSummary, labels: list[str] | None
) -> tuple[float, str]:
    """(serving overhead per step, how it was measured) from a served run's closed levels."""
    bare = dataclasses.replace(model, serving_overhead_s=0.0, overhead_source="")
    diffs, used = [], []
    for lv, level in closed_levels(summary, labels):
        served = lv.tpot_s.p50
        pred = predict(bare, knobs, level).tpot_s.p50
        if served and pred:
            diffs.append(served - pred)
            used.append(lv.label)
    if not diffs:
        raise InferlabError(
            "--calibrate: the run has no closed-loop level with a measured TPOT to measure the "
            "serving overhead from"
        )
    over = statistics.median(diffs)
    note = "" if over >= 0 else " (negative: served faster than the engine predicts; kept at 0)"
    return max(over, 0.0), f"measured from the served run at {', '.join(used)}{note}"
