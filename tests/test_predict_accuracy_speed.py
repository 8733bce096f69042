"""benchmarks/predict_accuracy.py: under each shape, the machine's speed since the profile
(the drift canary both took) and, where it moved beyond noise, the shape re-simulated at the
measurement's speed (`--step-scale` the ratio): beside the grade, never graded. Recorded
readings in constructed summaries; the re-simulation is a stand-in that records its scale."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import ModuleType

import pytest

from inferlab.summary import LevelSummary, RunSummary
from tests.metrics.test_speed_shift import canary

SWEEP = Path(__file__).parent / "data" / "llama_cpu_sweep_summary.json"
PROFILED = canary((14.0, "lone", None), (14.1, "lone", None), (14.3, None, None), rest=2)


def _measured(*tpots_ms: float) -> RunSummary:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    readings = [(t, "c=1", None) for t in tpots_ms[:-1]] + [(tpots_ms[-1], None, None)]
    return dataclasses.replace(run, levels=run.levels[:1], canary=canary(*readings, rest=3))


def test_a_shape_measured_on_a_slower_machine_says_so_and_is_restated_at_its_speed(
    predict_accuracy: ModuleType,
) -> None:
    measured = _measured(16.4, 16.6, 16.9, 16.6)
    scales: list[float] = []

    def resimulate(x: float) -> LevelSummary:
        scales.append(x)
        lv = measured.levels[0]  # the stand-in predicts exactly the measurement, at x
        return dataclasses.replace(lv, tpot_s=dataclasses.replace(lv.tpot_s, p50=0.0121))

    speed = predict_accuracy.speed_row(PROFILED, measured, resimulate)
    assert scales == [pytest.approx(16.6 / 14.1)]  # --step-scale 1.177
    assert speed["shift"]["beyond_noise"] is True
    assert speed["shift"]["ratio"] == pytest.approx(16.6 / 14.1)
    at = speed["at_measured_speed"]
    assert at["tpot_s"]["p50"] == 0.0121
    assert at["errors"]["tpot_p50"] == pytest.approx(0.0121 / measured.levels[0].tpot_s.p50 - 1)
    line = predict_accuracy.speed_line(json.loads(json.dumps(speed)))  # as accuracy.json
    assert line.startswith(
        f"{'':>16}machine speed: the machine ran 18 % slower during the measurement than "
        "during the profile (canary 14.1 -> 16.6 ms), beyond both runs' own canary spread"
    )
    assert "; at the measurement's speed (every profiled cost x1.18, re-simulated; " in line
    assert "TPOT p50 12.1 ms (+1 %)" in line  # measured 12.04 ms


def test_within_noise_nothing_is_resimulated_and_without_a_canary_nothing_is_said(
    predict_accuracy: ModuleType,
) -> None:
    def never(x: float) -> LevelSummary:
        raise AssertionError("re-simulated within noise")

    speed = predict_accuracy.speed_row(PROFILED, _measured(14.2, 14.0, 14.4, 14.3), never)
    assert speed["shift"]["beyond_noise"] is False and speed["at_measured_speed"] is None
    assert predict_accuracy.speed_line(speed).endswith("cannot tell the two speeds apart")
    assert predict_accuracy.speed_row(None, _measured(14.0, 14.0), never) is None
    old = dataclasses.replace(_measured(14.0, 14.0), canary=None)  # a bench before the canary
    assert predict_accuracy.speed_row(PROFILED, old, never) is None
