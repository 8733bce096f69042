"""The demo's choice of a Poisson level: 70 % of the capacity the simulator predicts at the
sweep's largest concurrency, its rate rounded to two significant digits."""

from __future__ import annotations

import pytest

from inferlab.demo.levels import _sig2, poisson_level
from inferlab.demo.slo import DEMO_SLO, demo_slo
from inferlab.errors import InferlabError
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.sim.predict import make_predictor
from inferlab.summary import Predicted, PredictedQuantiles
from tests.engines.baseline import engine
from tests.sim.test_predict_demo import ENGINE, sweep


def test_the_poisson_level_is_70_percent_of_the_predicted_capacity() -> None:
    pr = make_predictor(engine(ENGINE, 0.0133), 4, 4 * 128, demo_slo(None, 0.9))
    assert pr is not None and pr.slo is not None and pr.slo.text == DEMO_SLO
    top = Level("concurrency", 4)
    w = sweep(Level("concurrency", 1), top)
    level, how = poisson_level(pr, w, top)
    capacity = pr.predict(w, top).tokens_per_s / 32
    assert level.kind == "rate" and level.value == pytest.approx(0.7 * capacity, rel=0.05)
    assert f"{level.value:g} req/s = 70% of the predicted capacity {capacity:.2f}" in how
    assert level.value == _sig2(0.7 * capacity)


@pytest.mark.parametrize(
    ("x", "rounded"), [(1.234, 1.2), (0.04567, 0.046), (123.4, 120.0), (9.96, 10.0), (0.0, 0.0)]
)
def test_a_rate_keeps_two_significant_digits(x: float, rounded: float) -> None:
    assert _sig2(x) == pytest.approx(rounded)


def test_no_poisson_level_without_a_predicted_capacity() -> None:
    class Idle:  # a predictor whose closed loop produces no tokens
        def predict(self, workload: Workload, level: Level) -> Predicted:
            none = PredictedQuantiles(p50=None)
            return Predicted(ttft_s=none, tpot_s=none, tokens_per_s=0.0, source="", held_out=True)

    top = Level("concurrency", 4)
    with pytest.raises(InferlabError, match="the predicted capacity is 0"):
        poisson_level(Idle(), sweep(top), top)  # type: ignore[arg-type]
