"""Predictions scored against measurements (metrics/scoring.py): the errors a level's
`predicted` block carries, the band's inside / outside and its counts, the targets a
held-out shape of benchmarks/predict_accuracy.py is judged by, and each quantity's grade
against its target or the measurement's own 95 % interval."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from inferlab.console.predict_text import (
    GRADE_RULE,
    NOTHING_GRADED,
    comparison_lines,
    graded_lines,
)
from inferlab.metrics.scoring import (
    TARGETS,
    Scored,
    as_close_as_repeat,
    attach,
    band_count,
    band_of,
    errors,
    grade,
    measured_band,
    missed,
    noise_half_width,
    scored,
    scored_quantities,
    target_name,
    with_prediction,
)
from inferlab.report.interval_text import TAIL
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.sim.predict import closed_levels, predict, predicted_of
from inferlab.summary import (
    Interval,
    LevelSummary,
    Predicted,
    PredictedQuantiles,
    PredictedRange,
    RunSummary,
    Uncertainty,
)
from tests.sim.test_predict import SWEEP, model
from tests.sim.test_predict_block import predicted_run


def measured() -> LevelSummary:
    """The checked-in llama.cpp sweep's first level (c=1), no SLO."""
    return RunSummary.from_json(json.loads(SWEEP.read_text())).levels[0]


def pred(ttft: float, tpot: float, tok_s: float, good: float | None = None) -> Predicted:
    return Predicted(
        ttft_s=PredictedQuantiles(p50=ttft, p99=2 * ttft),
        tpot_s=PredictedQuantiles(p50=tpot),
        tokens_per_s=tok_s,
        source="test",
        held_out=True,
        goodput_requests_per_s=good,
    )


def test_errors_against_the_level_measured() -> None:
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    lv, level, reqs = closed_levels(run)[0]
    p = predict(model(), LlamaCppKnobs(parallel=16, ctx_size=2560), level, reqs)
    e = errors(p, lv)
    assert e.tpot_p50 == pytest.approx(
        ((p.tpot_s.p50 or 0) - (lv.tpot_s.p50 or 0)) / 0.012036652325396826
    )
    assert e.ttft_p50 is not None and e.tokens_per_s is not None
    assert e.goodput_requests_per_s is None  # no SLO on either side


def test_each_error_is_predicted_minus_measured_over_measured() -> None:
    m = measured()
    assert m.tpot_s.p50 and m.ttft_s.p50 and m.ttft_s.p99
    p = pred(1.5 * m.ttft_s.p50, 0.9 * m.tpot_s.p50, 2 * m.output_tokens_per_s_total)
    e = errors(p, m)
    assert e.ttft_p50 == pytest.approx(0.5)
    assert e.tpot_p50 == pytest.approx(-0.1)
    assert e.tokens_per_s == pytest.approx(1.0)
    assert e.ttft_p99 == pytest.approx(3 * m.ttft_s.p50 / m.ttft_s.p99 - 1)


def test_a_shapes_row_holds_every_quantity_in_order_and_both_zero_is_exact() -> None:
    m = measured()
    rows = scored_quantities(predicted_of(m, "", True, 0), m)
    assert list(rows) == [
        "tpot_p50_s", "ttft_p50_s", "ttft_p99_s", "goodput_requests_per_s", "tokens_per_s",
        "prefix_hit_ratio",
    ]  # fmt: skip
    exact = Scored(predicted=m.tpot_s.p50, measured=m.tpot_s.p50, error=0.0, grade="within_target")
    assert rows["tpot_p50_s"] == exact  # an old summary: no interval to hold
    assert rows["goodput_requests_per_s"].error is None  # no SLO: nothing to compare
    assert rows["goodput_requests_per_s"].grade is None  # ... nor to judge
    assert rows["tokens_per_s"].grade is None  # no target
    assert rows["tpot_p50_s"].to_json() == {
        "predicted": m.tpot_s.p50,
        "measured": m.tpot_s.p50,
        "error": 0.0,
        "grade": "within_target",
    }
    assert scored(0.0, 0.0).error == 0.0  # a shape's goodput 0 on both sides
    assert scored(1.0, 0.0).error is None and scored(None, 2.0).error is None
    assert scored(3.0, 2.0).error == pytest.approx(0.5)


def test_the_level_block_leaves_a_zero_measurement_without_an_error() -> None:
    """summary.json's errors say None where the measured value is 0, even when the
    prediction is 0 too (the shape rows call that exact)."""
    m = measured()
    p = dataclasses.replace(predicted_of(m, "", True, 0), tokens_per_s=0.0)
    zero = dataclasses.replace(m, output_tokens_per_s_total=0.0)
    assert errors(p, zero).tokens_per_s is None
    assert scored_quantities(p, zero)["tokens_per_s"].error == 0.0


def row(tpot: Scored, ttft50: Scored, ttft99: Scored, good: Scored) -> dict[str, Scored]:
    return dict(zip(TARGETS, (tpot, ttft50, ttft99, good), strict=True))


def test_the_targets_and_what_counts_as_missing_them() -> None:
    assert TARGETS == {
        "tpot_p50_s": 0.10,
        "ttft_p50_s": 0.15,
        "ttft_p99_s": 0.25,
        "goodput_requests_per_s": 0.10,
    }
    ok = scored(1.0, 1.0)
    assert missed(row(ok, ok, ok, ok)) == []
    # at the target is within it; beyond it, or no error, is a miss
    edge = row(scored(11.0, 10.0), scored(11.5, 10.0), scored(7.5, 10.0), scored(9.0, 10.0))
    assert missed(edge) == []
    far = row(scored(1.2, 1.0), scored(None, 1.0), scored(1.3, 1.0), scored(0.5, 1.0))
    assert missed(far) == ["tpot_p50_s", "ttft_p50_s", "ttft_p99_s", "goodput"]


def test_a_quantity_neither_side_has_is_not_judged() -> None:
    ok = scored(1.0, 1.0)
    nothing = scored(None, None)  # one-token replies: no TPOT on either side
    assert missed(row(nothing, ok, ok, nothing)) == []
    assert missed(row(ok, ok, ok, scored(0.0, 0.0))) == []  # no good request on either side
    assert missed(row(ok, ok, ok, scored(0.0, 0.4))) == ["goodput"]
    assert [target_name(k) for k in TARGETS][-1] == "goodput"


def test_as_close_as_the_measurement_made_again() -> None:
    assert as_close_as_repeat(0.05, -0.2) and as_close_as_repeat(0.0, 0.0)
    assert as_close_as_repeat(-0.2, 0.2) and not as_close_as_repeat(-0.3, 0.2)


def test_the_band_is_the_lowest_and_highest_prediction_and_a_measurement_falls_in_or_out() -> None:
    m = measured()
    assert m.tpot_s.p50 and m.ttft_s.p50
    preds = [pred(m.ttft_s.p50 * f, m.tpot_s.p50 * f, 10.0) for f in (1.0, 0.8, 1.2)]
    band = band_of(0.2, preds)
    assert band.speed_spread == 0.2
    assert band.tpot_p50_s.low == pytest.approx(0.8 * m.tpot_s.p50)
    assert band.tpot_p50_s.high == pytest.approx(1.2 * m.tpot_s.p50)
    assert band.goodput_requests_per_s == PredictedRange(low=None, high=None)  # not predicted
    judged = measured_band(band, m)
    assert judged.tpot_p50_s.inside is True and judged.ttft_p50_s.inside is True
    assert judged.goodput_requests_per_s.inside is None  # no SLO measured
    slower = dataclasses.replace(m, tpot_s=dataclasses.replace(m.tpot_s, p50=1.3 * m.tpot_s.p50))
    assert measured_band(band, slower).tpot_p50_s.inside is False


def test_a_bound_met_within_its_own_rounding_is_inside() -> None:
    m = measured()
    assert m.tpot_s.p50
    high = m.tpot_s.p50 * (1 - 1e-12)  # the measurement a rounding above the band's top
    band = band_of(0.1, [pred(1.0, 0.5 * high, 10.0), pred(1.0, high, 10.0)])
    assert measured_band(band, m).tpot_p50_s.inside is True


def test_the_band_counts_name_the_levels_outside() -> None:
    r = PredictedRange(low=1.0, high=2.0)
    ranges = [
        ("c=1", dataclasses.replace(r, inside=True)),
        ("c=2", dataclasses.replace(r, inside=False)),
        ("c=4", r),  # never measured against: not judged
        ("c=8", dataclasses.replace(r, inside=True)),
    ]
    n = band_count(ranges)
    assert (n.inside, n.judged, n.outside) == (2, 3, ("c=2",))
    assert band_count([("c=4", r)]).judged == 0


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


def with_tpot_interval(m: LevelSummary, below: float, above: float) -> LevelSummary:
    """The level with a measured 95 % interval of TPOT p50: `below` and `above` it, as
    shares of the measured value."""
    p50 = m.tpot_s.p50
    assert p50
    iv = Interval(quantity="tpot_s.p50", value=p50, ci95=((1 - below) * p50, (1 + above) * p50))
    u = Uncertainty(repeats=3, covers_drift=True, method="test", resamples=2000, intervals=(iv,))
    return dataclasses.replace(m, uncertainty=u)


@pytest.mark.parametrize(
    ("off", "half_width", "expected"),
    [
        (0.12, 0.15, "within_noise"),  # beyond the 10 % target, inside the interval
        (-0.12, 0.15, "within_noise"),
        (0.12, 0.03, "miss"),  # beyond both
        (0.08, 0.03, "within_target"),
        (0.08, 0.15, "within_target"),  # the target first, where both hold
        (0.12, 0.25, "ungradable"),  # an interval over twice the target grades nothing
        (0.02, 0.25, "ungradable"),  # even an error inside the target
    ],
)
def test_a_tpot_prediction_is_graded_against_the_target_or_the_measured_interval(
    off: float, half_width: float, expected: str
) -> None:
    m = with_tpot_interval(measured(), half_width, half_width)
    assert m.tpot_s.p50
    p = dataclasses.replace(
        predicted_of(m, "", True, 0), tpot_s=PredictedQuantiles(p50=(1 + off) * m.tpot_s.p50)
    )
    s = scored_quantities(p, m)["tpot_p50_s"]
    assert s.grade == expected and s.error == pytest.approx(off)
    assert s.ci95 == pytest.approx(
        ((1 - half_width) * m.tpot_s.p50, (1 + half_width) * m.tpot_s.p50)
    )
    assert missed({**row(s, s, s, s), **scored_quantities(p, m)}) == (
        ["tpot_p50_s"] if expected == "miss" else []
    )


def test_the_half_width_is_the_one_on_the_predictions_side() -> None:
    # measured 100 with a skewed interval [97, 118]: 112 above lies inside it, 88 below
    # does not, though the wider side (18) would hold it
    ci = (97.0, 118.0)
    assert grade(112.0, 100.0, 0.12, ci, 0.10) == "within_noise"
    assert grade(88.0, 100.0, -0.12, ci, 0.10) == "miss"
    assert noise_half_width(112.0, 100.0, ci) == pytest.approx(18.0)
    assert noise_half_width(88.0, 100.0, ci) == pytest.approx(3.0)
    # [97, 130]: above, 30 > twice the target (20): ungradable; below, 3: still graded
    assert grade(112.0, 100.0, 0.12, (97.0, 130.0), 0.10) == "ungradable"
    assert grade(101.0, 100.0, 0.01, (97.0, 130.0), 0.10) == "ungradable"
    assert grade(88.0, 100.0, -0.12, (97.0, 130.0), 0.10) == "miss"
    # no upper end (too few requests): a prediction above is ungradable, below graded
    assert noise_half_width(101.0, 100.0, ci, undersampled=True) == math.inf
    assert grade(101.0, 100.0, 0.01, ci, 0.10, undersampled=True) == "ungradable"
    assert grade(99.0, 100.0, -0.01, ci, 0.10, undersampled=True) == "within_target"
    assert grade(88.0, 100.0, -0.12, None, 0.10) == "miss"  # no interval: the target alone
    assert grade(None, 100.0, None, ci, 0.10) == "miss"  # predicted nothing


def test_an_old_row_without_intervals_is_graded_by_its_target_alone() -> None:
    old = Scored.from_json({"predicted": 1.12, "measured": 1.0, "error": 0.12}, "tpot_p50_s")
    assert old.ci95 is None and old.grade is None
    ok = scored(1.0, 1.0)
    assert missed(row(old, ok, ok, ok)) == ["tpot_p50_s"]
    noisy = Scored.from_json(
        {"predicted": 1.12, "measured": 1.0, "error": 0.12, "ci95": [0.85, 1.15]}, "tpot_p50_s"
    )
    assert missed(row(noisy, ok, ok, ok)) == []


def test_the_level_block_carries_each_targets_grade() -> None:
    m = with_tpot_interval(measured(), 0.05, 0.15)
    assert m.tpot_s.p50 and m.ttft_s.p50 and m.ttft_s.p99
    p = pred(1.5 * m.ttft_s.p50, 1.12 * m.tpot_s.p50, 10.0)
    p = dataclasses.replace(p, ttft_s=PredictedQuantiles(p50=1.5 * m.ttft_s.p50, p99=m.ttft_s.p99))
    lv = with_prediction(m, p)
    assert lv.predicted is not None and lv.predicted.graded is not None
    by = {g.quantity: g for g in lv.predicted.graded}
    assert list(by) == ["tpot_p50_s", "ttft_p50_s", "ttft_p99_s"]  # no SLO: no goodput
    assert by["tpot_p50_s"].grade == "within_noise" and by["tpot_p50_s"].target == 0.10
    assert by["tpot_p50_s"].ci95 == pytest.approx((0.95 * m.tpot_s.p50, 1.15 * m.tpot_s.p50))
    assert by["ttft_p50_s"].grade == "miss" and by["ttft_p50_s"].ci95 is None  # none measured
    assert by["ttft_p99_s"].grade == "within_target" and by["ttft_p99_s"].error == 0.0
    back = LevelSummary.from_json(json.loads(json.dumps(lv.to_json())))
    assert back == lv  # summary.json keeps the grades
    assert lv.to_json()["predicted"]["graded"][0] == {
        "quantity": "tpot_p50_s",
        "predicted": p.tpot_s.p50,
        "measured": m.tpot_s.p50,
        "ci95": list(by["tpot_p50_s"].ci95 or ()),
        "error": by["tpot_p50_s"].error,
        "target": 0.10,
        "grade": "within_noise",
    }


def test_the_demo_prints_each_levels_interval_and_grade() -> None:
    m = with_tpot_interval(measured(), 0.05, 0.15)
    assert m.tpot_s.p50 and m.ttft_s.p50
    p = pred(m.ttft_s.p50, 1.12 * m.tpot_s.p50, 10.0)
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    run = dataclasses.replace(run, levels=(with_prediction(m, p),))
    lines = graded_lines(run)
    assert lines[0] == GRADE_RULE
    ms = m.tpot_s.p50 * 1e3
    assert f"{ms:.1f} [{0.95 * ms:.1f}-{1.15 * ms:.1f}] within_noise" in lines[2]
    assert lines[2].split()[:3] == ["c=1", f"{m.ttft_s.p50 * 1e3:.0f}", "within_target"]
    assert lines[3].startswith("predicted: TTFT p50 1 of 1, TTFT p99 0 of 1, TPOT p50 1 of 1")
    assert "(1 within noise)" in lines[3] and lines[3].endswith("missed: c=1 TTFT p99")
    assert graded_lines(dataclasses.replace(run, levels=(m,))) == []  # nothing predicted


def test_the_demo_marks_a_p99_of_too_few_requests_with_a_question_mark() -> None:
    m = measured()
    p99 = m.ttft_s.p99
    assert p99
    few = Interval(quantity="ttft_s.p99", value=p99, ci95=(0.8 * p99, 1.1 * p99))
    u = Uncertainty(repeats=3, covers_drift=True, method="test", resamples=2000, intervals=(few,))
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    p = pred(m.ttft_s.p50, m.tpot_s.p50, 10.0)
    p = dataclasses.replace(p, ttft_s=PredictedQuantiles(p50=m.ttft_s.p50, p99=1.05 * p99))
    for undersampled, shown in (
        (None, f"{1.1 * p99 * 1e3:.0f}] within_target"),
        (True, "?] ungradable"),  # above a p99 with no upper end: nothing to grade by
    ):
        iv = dataclasses.replace(few, tail_undersampled=undersampled)
        lv = with_prediction(
            dataclasses.replace(m, uncertainty=dataclasses.replace(u, intervals=(iv,))), p
        )
        lines = graded_lines(dataclasses.replace(run, levels=(lv,)))
        assert f"{p99 * 1e3:.0f} [{0.8 * p99 * 1e3:.0f}-{shown}" in lines[2]
        assert (TAIL in lines) is bool(undersampled)  # the `?` is explained where it shows
        counted = "TTFT p99 0 of 1 (1 ungradable)" if undersampled else "TTFT p99 1 of 1"
        assert counted in lines[3], lines[3]


def test_the_demo_says_plainly_when_it_could_grade_nothing() -> None:
    m = with_tpot_interval(measured(), 0.25, 0.25)  # +-25 %: over twice the 10 % target
    assert m.tpot_s.p50
    p = pred(m.ttft_s.p50 or 0.0, m.tpot_s.p50, 10.0)
    lv = with_prediction(m, p)
    assert lv.predicted is not None and lv.predicted.graded is not None
    only_tpot = tuple(g for g in lv.predicted.graded if g.quantity == "tpot_p50_s")
    assert [g.grade for g in only_tpot] == ["ungradable"]
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    alone = dataclasses.replace(lv, predicted=dataclasses.replace(lv.predicted, graded=only_tpot))
    lines = graded_lines(dataclasses.replace(run, levels=(alone,)))
    assert "TPOT p50 0 of 1 (1 ungradable)" in lines[3] and lines[-1] == NOTHING_GRADED
    assert NOTHING_GRADED not in graded_lines(dataclasses.replace(run, levels=(lv,)))
