"""The demo predicts every level before it measures it, then prints the error of each number.

The prediction (sim/predict.py) is the simulator with llama-server's own scheduler
(the llama.cpp policy at the demo server's knobs: --parallel and --ctx-size as the
demo starts it, n_batch 2048 and n_ubatch 512 as llama-server defaults them) and the
step time fitted to the engine-bench result the demo has just measured, with no
serving overhead: nothing is fitted to the served run, so every level is held out.
It runs on the request specs bench then sends (`Workload.requests(level)`).

The demo's SLO, applied to the predicted and the measured levels alike (goodput):
`ttft=2s,tpot=150ms` unless --slo gives another; 150 ms per token is about 7 tokens/s,
a person's reading speed, and 2 s the usual bound for a chat's first token.

The Poisson level runs at 70 % of the capacity the simulator predicts: the predicted
throughput of the closed loop at the largest concurrency (every slot busy), divided
by the output tokens of a request, in requests per second.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from typing import TYPE_CHECKING

from inferlab.errors import InferlabError
from inferlab.units import fmt_duration

if TYPE_CHECKING:
    from inferlab.engine_result import EngineBench
    from inferlab.load.spec import Level
    from inferlab.load.workload import Workload
    from inferlab.sim.predict import Predictor
    from inferlab.slo.grammar import Slo
    from inferlab.summary import Predicted, RunSummary

DEMO_SLO = "ttft=2s,tpot=150ms"
SLO_WHY = "150 ms per token ~ 7 tokens/s, reading speed; 2 s to the first token"
POISSON_LOAD = 0.7  # of the predicted capacity


def add_slo_flags(p: argparse.ArgumentParser) -> None:
    """--slo and --min-attainment, as bench reads them; the demo has a default SLO."""
    from inferlab.commands.common import real
    from inferlab.commands.slo_args import slo_text

    p.add_argument(
        "--slo",
        type=slo_text,
        help=f"objectives for goodput, predicted and measured ({DEMO_SLO}: {SLO_WHY})",
    )
    p.add_argument(
        "--min-attainment",
        type=real(0.0, 1.0, above=True),
        default=0.9,
        help="share of requests within the SLO for a level to pass (0.9)",
    )


def demo_slo(text: str | None, min_attainment: float) -> Slo:
    from inferlab.slo.grammar import parse_slo

    return parse_slo(text or DEMO_SLO, min_attainment)


def slo_line(slo: Slo, given: bool) -> str:
    why = "given with --slo" if given else f"the demo's default: {SLO_WHY}"
    return (
        f"SLO {slo.text} ({why}); a level passes with >= {slo.min_attainment:.0%} of its "
        "requests within it; goodput = good requests/s"
    )


def make_predictor(
    engine: EngineBench | None, parallel: int, ctx_size: int, slo: Slo | None
) -> Predictor | None:
    """None without an engine measurement (the demo then measures without predicting)."""
    if engine is None:
        return None
    from inferlab.sim.policies.llamacpp import LlamaCppKnobs
    from inferlab.sim.predict import Predictor
    from inferlab.sim.steptime_engine import EngineStepTime, fit_engine

    knobs = LlamaCppKnobs(parallel=parallel, ctx_size=ctx_size)
    model = EngineStepTime(fit_engine(engine), 0.0, knobs.n_ubatch)
    return Predictor(model, knobs, slo)


def _sig2(x: float) -> float:
    """Two significant digits: a rate that reads well in a level's label."""
    return round(x, 1 - int(math.floor(math.log10(abs(x))))) if x > 0 else x


def poisson_level(pr: Predictor, closed: Workload, top: Level) -> tuple[Level, str]:
    """The Poisson level at 70 % of the predicted capacity, and how that was found."""
    from inferlab.load.spec import Level

    pred = pr.predict(closed, top)
    out_tokens = closed.mean_tokens()[1]
    capacity = pred.tokens_per_s / out_tokens
    rate = _sig2(POISSON_LOAD * capacity)
    if not rate > 0:
        raise InferlabError("the predicted capacity is 0: no Poisson level")
    how = (
        f"Poisson level at {rate:g} req/s = {POISSON_LOAD:.0%} of the predicted capacity "
        f"{capacity:.2f} req/s ({pred.tokens_per_s:.1f} tok/s predicted at {top.label}, every "
        f"slot busy, / {out_tokens} output tokens)"
    )
    return Level("rate", rate), how


def predict_levels(pr: Predictor, workload: Workload) -> dict[str, Predicted]:
    """Every level of the workload predicted, by label; a level that cannot be predicted
    is left out, and one line says why."""
    out: dict[str, Predicted] = {}
    for level in workload.levels:
        try:
            out[level.label] = pr.predict(workload, level)
        except InferlabError as e:
            print(f"    predicted {level.label}: not predicted: {e}")
    return out


def prediction_lines(preds: dict[str, Predicted]) -> list[str]:
    """Before the sweep: what each level is predicted to measure."""
    lines = []
    for label, p in preds.items():
        good = (
            ""
            if p.goodput_requests_per_s is None
            else f", goodput {p.goodput_requests_per_s:.2f} req/s"
        )
        lines.append(
            f"predicted {label:>10}: TTFT p50 {fmt_duration(p.ttft_s.p50, 3)}, "
            f"p99 {fmt_duration(p.ttft_s.p99, 3)}; TPOT p50 {fmt_duration(p.tpot_s.p50, 3)}; "
            f"{p.tokens_per_s:.1f} tok/s{good}"
        )
    return lines


def attach(summary: RunSummary, preds: dict[str, Predicted]) -> RunSummary:
    """The measured summary with each level's prediction and its errors."""
    from inferlab.sim.predict import with_prediction

    levels = tuple(
        with_prediction(lv, preds[lv.label]) if lv.label in preds else lv for lv in summary.levels
    )
    return replace(summary, levels=levels)


def comparison_lines(summary: RunSummary) -> list[str]:
    """After the sweep: predicted, measured and the error, per level and quantity."""
    from inferlab.report.predicted import prediction_table

    table = prediction_table(summary)
    if not table:
        return []
    return [
        "predicted before measuring (engine alone, no serving overhead) vs measured; "
        "err = (predicted - measured) / measured:",
        *table,
    ]
