"""The demo's prediction step without a server: the Poisson level at 70 % of the predicted
capacity, every level (sweep, Poisson, trace) predicted on the specs bench sends, and the
table printed after the measurement."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from inferlab.console.predict_text import comparison_lines, prediction_lines
from inferlab.demo.slo import DEMO_SLO, demo_slo
from inferlab.load.lengths import LengthDist
from inferlab.load.spec import Level
from inferlab.load.traces import ShapedTrace
from inferlab.load.workload import TraceLoad, Workload
from inferlab.sim.predict import attach, make_predictor, poisson_level, predict_levels
from tests.engines.baseline import engine
from tests.sim.test_predict_block import predicted_run

ENGINE = {1: 0.0133, 2: 0.0245, 4: 0.0389}


def sweep(*levels: Level) -> Workload:
    return Workload(
        LengthDist.parse("32", "--prompt-tokens"),
        LengthDist.parse("32", "--output-tokens"),
        levels,
        requests_per_level=8,
    )


def test_the_poisson_level_is_70_percent_of_the_predicted_capacity() -> None:
    pr = make_predictor(engine(ENGINE, 0.0133), 4, 4 * 128, demo_slo(None, 0.9))
    assert pr is not None and pr.slo is not None and pr.slo.text == DEMO_SLO
    top = Level("concurrency", 4)
    w = sweep(Level("concurrency", 1), top)
    level, how = poisson_level(pr, w, top)
    capacity = pr.predict(w, top).tokens_per_s / 32
    assert level.kind == "rate" and level.value == pytest.approx(0.7 * capacity, rel=0.05)
    assert f"{level.value:g} req/s = 70% of the predicted capacity {capacity:.2f}" in how


def test_every_demo_level_is_predicted_on_its_own_specs() -> None:
    pr = make_predictor(engine(ENGINE, 0.0133), 4, 4 * 128, demo_slo(None, 0.9))
    assert pr is not None
    trace = ShapedTrace(
        source="test",
        arrival_s=np.array([0.0, 0.5, 2.0]),
        prompt_tokens=np.array([20, 40, 10]),
        output_tokens=np.array([4, 8, 2]),
        hash_ids=None,
        block_tokens=1,
        file_lines=np.array([2, 3, 4]),
        window_s=(0.0, 3.0),
        speed=1.0,
        length_scale=1.0,
    )
    levels = (Level("concurrency", 1), Level("rate", 1.5), Level("trace", 1.0, "trace"))
    w = dataclasses.replace(sweep(*levels), trace=TraceLoad(trace, "test"))
    preds, skipped = predict_levels(pr, w)
    assert skipped == []
    assert list(preds) == ["c=1", "rate=1.5/s", "trace"]
    assert [p.requests for p in preds.values()] == [len(w.requests(lv)) for lv in levels]
    assert preds["trace"].requests == 3 and all(p.held_out for p in preds.values())
    lines = prediction_lines(preds)
    assert lines[2].startswith("predicted      trace: TTFT p50 ")


def test_the_table_after_the_measurement() -> None:
    run = predicted_run()
    stripped = dataclasses.replace(
        run, levels=tuple(dataclasses.replace(lv, predicted=None) for lv in run.levels)
    )
    preds = {lv.label: lv.predicted for lv in run.levels if lv.predicted}
    again = attach(stripped, {k: dataclasses.replace(v, errors=None) for k, v in preds.items()})
    assert again == run  # the errors recomputed against the measured levels
    lines = comparison_lines(again)
    assert lines[0].startswith("predicted before measuring (engine alone, no serving overhead)")
    assert len(lines) == 3 + len(run.levels) and lines[3].split()[:2] == ["c=1", "yes"]
