"""The demo's choice of what to measure beyond its concurrency sweep: a Poisson level at 70 %
of the capacity the simulator predicts.

The capacity is the closed loop's predicted throughput at the largest concurrency (every
slot busy) over a request's output tokens; the rate is rounded to two significant digits,
so the level's label reads well. The prediction itself is sim/predict.py's.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from inferlab.errors import InferlabError
from inferlab.load.spec import Level

if TYPE_CHECKING:
    from inferlab.load.workload import Workload
    from inferlab.sim.predict import Predictor

POISSON_LOAD = 0.7  # the demo's Poisson level: this share of the predicted capacity


def _sig2(x: float) -> float:
    """Two significant digits: a rate that reads well in a level's label."""
    return round(x, 1 - int(math.floor(math.log10(abs(x))))) if x > 0 else x


def poisson_level(pr: Predictor, closed: Workload, top: Level) -> tuple[Level, str]:
    """The Poisson level at 70 % of the predicted capacity, and how that was found."""
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
