"""The demo's prediction step without a server: every level (sweep, Poisson, trace)
predicted on the specs bench sends (the Poisson level's rate: tests/demo/test_levels.py; the
table after the measurement: tests/metrics/test_scoring.py)."""

from __future__ import annotations

import dataclasses

import numpy as np

from inferlab.console.predict_text import prediction_lines
from inferlab.demo.slo import demo_slo
from inferlab.load.lengths import LengthDist
from inferlab.load.spec import Level
from inferlab.load.traces import ShapedTrace
from inferlab.load.workload import TraceLoad, Workload
from inferlab.sim.predict import make_predictor, predict_levels
from tests.engines.baseline import engine

ENGINE = {1: 0.0133, 2: 0.0245, 4: 0.0389}


def sweep(*levels: Level) -> Workload:
    return Workload(
        LengthDist.parse("32", "--prompt-tokens"),
        LengthDist.parse("32", "--output-tokens"),
        levels,
        requests_per_level=8,
    )


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
        output_scale=1.0,
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
