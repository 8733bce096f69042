"""Predict a load level before measuring it: the engine's own step times, llama-server's scheduler.

`predict(model, knobs, level, requests)` runs the simulator with the llama.cpp policy
(sim/policies/llamacpp.py) and the step time fitted to an engine-bench result
(sim/steptime/engine.py) on a level's request specs, the ones load/ draws for bench
(`Workload.requests(level)`): the same requests are predicted and then measured. It
returns the typed `Predicted` block a level of summary.json holds: TTFT p50/p99, TPOT
p50, aggregate tok/s and, with an SLO, goodput (judged as bench judges a level). How a
prediction is scored against its measurement (errors, band, targets) is
metrics/scoring.py's.

`measure_overhead` is the one constant a served run may add: the serving overhead
per step, the median over the chosen levels of (served TPOT p50 - predicted TPOT
p50 with no overhead).

A closed loop's users start together, as bench's do; with forced output lengths
they stay in step, every round's prompts prefilled in one step (a llama.cpp sweep
here measured TTFT p50 2.3 s at c=16, 32-token prompts at 188 tok/s: the prompts of
all 16 users in one step, not one prompt among the others' decodes).

The demo predicts every level before it measures it (`make_predictor`: the engine-bench
result it has just measured, llama-server's scheduler at the demo server's --parallel and
--ctx-size, no serving overhead, so every level is held out; `predict_levels`); which
levels it measures is demo/levels.py's.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from inferlab.errors import ConfigError, InferlabError
from inferlab.load.spec import Level, Requests
from inferlab.load.workload import Workload
from inferlab.metrics.scoring import band_of
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.sim.request import NO_COSTS, RequestCosts
from inferlab.sim.simulate_level import SimConfig, simulate_level
from inferlab.sim.steptime.engine import EngineStepTime, fit_engine
from inferlab.sim.steptime.profile import ProfileStepTime
from inferlab.summary import LevelSummary, Predicted, PredictedQuantiles, RunSummary

if TYPE_CHECKING:
    from inferlab.engines.result import EngineBench
    from inferlab.slo.grammar import Slo


StepSource = EngineStepTime | ProfileStepTime  # the engine alone, or the served profile


def describe_source(model: StepSource, knobs: LlamaCppKnobs) -> str:
    """What a prediction is made from, in one phrase."""
    policy = (
        f"llama.cpp policy, --parallel {knobs.parallel}, slot ctx {knobs.slot_ctx_tokens}, "
        f"n_batch {knobs.n_batch}, n_ubatch {knobs.n_ubatch}"
    )
    if isinstance(model, ProfileStepTime):
        f = model.fit
        return (
            f"the served profile ({model.source}): step and per-request costs "
            f"({f.request_overhead_s * 1e3:.1f} ms + "
            f"{f.request_per_prompt_token_s * 1e3:.3f} ms/prompt token); {policy}"
        )
    over = model.serving_overhead_s
    how = model.overhead_source or "none given"
    return (
        f"engine alone ({model.fit.gguf.rsplit('/', 1)[-1]}, {model.fit.threads} thread(s)); "
        f"{policy}; serving overhead {over * 1e3:.2f} ms/step ({how})"
    )


def predict_config(
    model: StepSource,
    knobs: LlamaCppKnobs,
    slo: Slo | None = None,
    costs: RequestCosts = NO_COSTS,
) -> SimConfig:
    """The simulation a prediction runs: llama-server's scheduler at `knobs`, the step
    times (and a profile's per-request costs), the SLO it is judged against."""
    return SimConfig(model, knobs.policy(), slo=slo, costs=costs)


def predicted_of(lv: LevelSummary, source: str, held_out: bool, requests: int) -> Predicted:
    """A simulated level as the `predicted` block of the level it predicts."""
    return Predicted(
        ttft_s=PredictedQuantiles(p50=lv.ttft_s.p50, p99=lv.ttft_s.p99),
        tpot_s=PredictedQuantiles(p50=lv.tpot_s.p50),
        tokens_per_s=lv.output_tokens_per_s_total,
        source=source,
        held_out=held_out,
        goodput_requests_per_s=lv.slo.goodput_requests_per_s if lv.slo else None,
        requests=requests,
        prefix_hit_ratio=lv.prefix_cache_hit_ratio,
        preemptions=lv.preemptions or None,  # absent when none (llama.cpp's never do)
    )


def predict(
    model: StepSource,
    knobs: LlamaCppKnobs,
    level: Level,
    reqs: Requests,
    slo: Slo | None = None,
    held_out: bool = True,
    costs: RequestCosts = NO_COSTS,
) -> Predicted:
    """Simulate `level`'s request specs on llama-server's scheduler with the engine's step
    times (closed loop: `level.value` users sharing the specs' queue, starting together;
    open loop and trace: each spec at its instant)."""
    if not len(reqs):
        raise InferlabError(f"level {level.label}: no requests to predict")
    if reqs.message_tokens is not None:
        raise InferlabError(f"level {level.label}: conversations are not predicted here")
    sl = simulate_level(predict_config(model, knobs, slo, costs), level, reqs)
    source = describe_source(model, knobs)
    return predicted_of(sl.summary, source, held_out, len(sl.result.requests))


@dataclass(frozen=True, slots=True)
class Predictor:
    """The step model (the engine alone, or the served profile with its per-request costs)
    and a server's scheduler, with the SLO it is judged against (the demo predicts every
    level with one before measuring it)."""

    model: StepSource
    knobs: LlamaCppKnobs
    slo: Slo | None
    costs: RequestCosts = NO_COSTS

    def predict(self, workload: Workload, level: Level) -> Predicted:
        """The level predicted; from a served profile, with its band: the same at every
        cost x (1 -+ the profile's speed spread)."""
        reqs = workload.requests(level)
        base = predict(self.model, self.knobs, level, reqs, self.slo, costs=self.costs)
        model = self.model
        if not isinstance(model, ProfileStepTime) or not model.fit.speed_spread:
            return base
        spread = model.fit.speed_spread
        try:  # a band that cannot be simulated leaves the prediction without one
            others = [
                predict(
                    model.scaled(x), self.knobs, level, reqs, self.slo, costs=self.costs.scaled(x)
                )
                for x in (1 - spread, 1 + spread)
            ]
        except InferlabError:
            return base
        return dataclasses.replace(base, band=band_of(spread, [base, *others]))


def run_workload(summary: RunSummary) -> Workload:
    """A bench run's load as load/ draws it, from what its summary states: fixed lengths at
    the run's prompt and output tokens, its seed and requests per level (exact for a run of
    fixed lengths and Poisson arrivals; a run of length distributions is predicted at its
    mean lengths)."""
    from inferlab.load.lengths import LengthDist
    from inferlab.load.limits import MAX_TOKENS

    w = summary.workload
    return Workload(
        LengthDist.parse(str(int(w.prompt_tokens)), "{prompt_tokens}", MAX_TOKENS),
        LengthDist.parse(str(int(w.output_tokens)), "{output_tokens}", MAX_TOKENS),
        (),
        requests_per_level=int(w.requests_per_level),
        seed=int(w.rest.get("seed") or 0),
    )


def closed_levels(
    summary: RunSummary, labels: list[str] | None = None
) -> list[tuple[LevelSummary, Level, Requests]]:
    """The closed-loop levels of a bench run, each with its level and request specs."""
    w = run_workload(summary)
    out = []
    for lv in summary.levels:
        if lv.concurrency is None or (labels and lv.label not in labels):
            continue
        level = Level("concurrency", float(int(lv.concurrency)))
        n = max(lv.requests_measured, int(lv.concurrency))
        out.append((lv, level, dataclasses.replace(w, requests_per_level=n).requests(level)))
    return out


def measure_overhead(
    model: EngineStepTime, knobs: LlamaCppKnobs, summary: RunSummary, labels: list[str] | None
) -> tuple[float, str]:
    """(serving overhead per step, how it was measured) from a served run's closed levels."""
    bare = dataclasses.replace(model, serving_overhead_s=0.0, overhead_source="")
    diffs, used = [], []
    for lv, level, reqs in closed_levels(summary, labels):
        served = lv.tpot_s.p50
        pred = predict(bare, knobs, level, reqs).tpot_s.p50
        if served and pred:
            diffs.append(served - pred)
            used.append(lv.label)
    if not diffs:
        raise ConfigError(
            "{calibrate}: the run has no closed-loop level with a measured TPOT to measure the "
            "serving overhead from"
        )
    over = statistics.median(diffs)
    note = "" if over >= 0 else " (negative: served faster than the engine predicts; kept at 0)"
    return max(over, 0.0), f"measured from the served run at {', '.join(used)}{note}"


def make_predictor(
    engine: EngineBench | None, parallel: int, ctx_size: int, slo: Slo | None
) -> Predictor | None:
    """None without an engine measurement (the demo then measures without predicting)."""
    if engine is None:
        return None
    knobs = LlamaCppKnobs(parallel=parallel, ctx_size=ctx_size)
    model = EngineStepTime(fit_engine(engine), 0.0, knobs.n_ubatch)
    return Predictor(model, knobs, slo)


def predict_levels(pr: Predictor, workload: Workload) -> tuple[dict[str, Predicted], list[str]]:
    """Every level of the workload predicted, by label; a level that cannot be predicted
    is left out, and a line says why."""
    out: dict[str, Predicted] = {}
    skipped: list[str] = []
    for level in workload.levels:
        try:
            out[level.label] = pr.predict(workload, level)
        except InferlabError as e:
            skipped.append(f"predicted {level.label}: not predicted: {e}")
    return out, skipped
