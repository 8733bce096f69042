"""The step time fitted to a bench run (`--calibrate RUN`), with the simulator in the loop.

Step time = a + b x decoding sequences + p x prefill tokens. A closed-loop
level's TPOT and TTFT are sums of step times, so they are (very nearly)
linear in (a, b, p): simulate each level once per unit parameter, then solve
least squares on the measured TTFT p50 and TPOT p50 of the chosen levels,
each equation weighted by 1/measurement (relative error). Two rounds, since the
users' stagger depends on the step time. llama.cpp mixes waiting prompt
tokens into the decode batch (n_batch 2048), which is chunked prefill with a
2048-token budget, and the measured closed loop drifts out of step, so the
simulated users start spread over one request's duration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from inferlab.errors import InferlabError
from inferlab.load.lengths import LengthDist
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.sim.scheduler import Policy
from inferlab.sim.simulate_level import SimConfig, simulate_level
from inferlab.sim.steptime.base import DecodeBatch, StepModel, WholeBatch
from inferlab.summary import RunSummary

LLAMA_CPP_BATCH_TOKENS = 2048
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class FittedStepTime(WholeBatch):
    base_s: float  # a: fixed cost of an iteration
    per_decode_s: float  # b: each decoding sequence
    per_prefill_token_s: float  # p: each prompt token
    source: str = "fitted"

    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        n_pre = sum(n for n, _ in prefill)
        return self.base_s + self.per_decode_s * decode.count + (self.per_prefill_token_s * n_pre)


def closed_loop(
    model: FittedStepTime,
    users: int,
    prompt: int,
    output: int,
    requests_per_user: int = 12,
    max_batch: int | None = None,
    pace: FittedStepTime | None = None,
) -> tuple[float, float]:
    """(TPOT p50, TTFT p50) of a simulated closed loop of `users` streams.

    Users start spread over one request's decode time under `pace` (default: the model).
    """
    stagger = output * (pace or model).step_time_s([], DecodeBatch.of([0] * users))
    policy = Policy("continuous", max_batch or users, LLAMA_CPP_BATCH_TOKENS)
    w = Workload(
        LengthDist.parse(str(prompt), "prompt tokens"),
        LengthDist.parse(str(output), "output tokens"),
        (),
        requests_per_level=users * requests_per_user,
    )
    lv = simulate_level(SimConfig(model, policy, w, stagger_s=stagger), Level("concurrency", users))
    return float(lv.summary.tpot_s.p50 or 0.0), float(lv.summary.ttft_s.p50 or 0.0)


def fit_from_summary(summary: RunSummary, labels: list[str] | None = None) -> FittedStepTime:
    w = summary.workload
    prompt, output = int(w.prompt_tokens), int(w.output_tokens)
    # each equation is weighted by 1 / measured value: a level with a zero TTFT or TPOT
    # (nothing measured) cannot be fitted in relative terms
    levels = [lv for lv in summary.levels if lv.concurrency and lv.tpot_s.p50 and lv.ttft_s.p50]
    if labels:
        levels = [lv for lv in levels if lv.label in labels]
    if len(levels) < 2:
        raise InferlabError(
            "calibration needs at least two concurrency levels with measured TTFT and TPOT"
        )
    model = FittedStepTime(0.005, 0.005, 0.005)
    for _ in range(2):
        rows, ys = [], []
        for lv in levels:
            c = int(lv.concurrency or 0)
            basis = [
                closed_loop(FittedStepTime(*unit), c, prompt, output, pace=model)
                for unit in ((1.0, _EPS, _EPS), (_EPS, 1.0, _EPS), (_EPS, _EPS, 1.0))
            ]
            rows.append([b[0] for b in basis])
            ys.append(lv.tpot_s.p50 or 0.0)
            rows.append([b[1] for b in basis])
            ys.append(lv.ttft_s.p50 or 0.0)
        a_mat, y = np.asarray(rows), np.asarray(ys)
        sol, *_ = np.linalg.lstsq(a_mat / y[:, None], np.ones_like(y), rcond=None)
        a, b, p = (max(float(v), 0.0) for v in sol)
        model = FittedStepTime(a, b, p, "fitted to " + ", ".join(lv.label for lv in levels))
    return model


def fitted_model(run: RunSummary, levels: tuple[str, ...] | None) -> StepModel:
    """The step time fitted to a bench run's levels (all: None), and its description."""
    fitted = fit_from_summary(run, list(levels) if levels else None)
    desc: dict[str, object] = {
        "step_time_model": "fitted",
        "base_s": fitted.base_s,
        "per_decode_s": fitted.per_decode_s,
        "per_prefill_token_s": fitted.per_prefill_token_s,
        "source": fitted.source,
    }
    return StepModel(fitted, desc)
