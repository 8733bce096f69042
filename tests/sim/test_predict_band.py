"""A served profile's prediction carries its band: the same level predicted with every
profiled cost x (1 - spread) and x (1 + spread), the spread being how far the machine's
speed moved while profiled; once measured, whether each measurement fell within it.

Measured here means simulated with the costs scaled by a factor the test picks, so which
side of the band the measurement falls on is known exactly."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from inferlab.console.predict_text import prediction_lines
from inferlab.demo.slo import demo_slo
from inferlab.load.spec import Level
from inferlab.metrics.scoring import attach
from inferlab.profile.fit import fit_profile
from inferlab.report.predicted import band_lines
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.sim.predict import Predictor, predict_config
from inferlab.sim.request import RequestCosts
from inferlab.sim.simulate_level import simulate_level
from inferlab.sim.steptime.profile import ProfileStepTime
from inferlab.summary import RunSummary
from tests.commands.test_demo_profile import SWEEP
from tests.profile.test_fit import scripted_observations
from tests.sim.test_predict_demo import sweep

KNOBS = LlamaCppKnobs(parallel=4, ctx_size=4096)
LEVELS = (Level("concurrency", 1), Level("concurrency", 4))


def predictor(spread: float | None) -> Predictor:
    fit = dataclasses.replace(fit_profile(scripted_observations()), speed_spread=spread)
    costs = RequestCosts(request_overhead_s=0.01, request_overhead_per_token_s=20e-6)
    return Predictor(ProfileStepTime(fit), KNOBS, demo_slo(None, 0.9), costs)


def measured_at(pr: Predictor, factor: float) -> RunSummary:
    """The sweep's levels "measured": simulated with every cost x `factor`."""
    assert isinstance(pr.model, ProfileStepTime)
    cfg = predict_config(pr.model.scaled(factor), KNOBS, pr.slo, pr.costs.scaled(factor))
    w = sweep(*LEVELS)
    levels = tuple(
        dataclasses.replace(simulate_level(cfg, lv, w.requests(lv)).summary, label=lv.label)
        for lv in LEVELS
    )
    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    return dataclasses.replace(run, levels=levels)


def test_the_band_is_the_prediction_at_the_machines_speed_plus_and_minus_its_spread() -> None:
    pr = predictor(0.1)
    w = sweep(*LEVELS)
    p = pr.predict(w, LEVELS[0])
    assert p.band is not None and p.band.speed_spread == 0.1
    tpot = p.tpot_s.p50
    assert tpot is not None
    # one user: every step x0.9 and x1.1, so the TPOT band is the base x0.9 to x1.1
    assert p.band.tpot_p50_s.low == pytest.approx(0.9 * tpot, rel=1e-7)
    assert p.band.tpot_p50_s.high == pytest.approx(1.1 * tpot, rel=1e-7)
    assert "at the machine's speed +-10%: TTFT p50" in prediction_lines({"c=1": p})[0]
    assert predictor(None).predict(w, LEVELS[0]).band is None  # no spread: no band


@pytest.mark.parametrize(("factor", "inside"), [(1.05, True), (0.97, True), (1.3, False)])
def test_a_measurement_is_within_the_band_when_the_machine_moved_less_than_the_spread(
    factor: float, inside: bool
) -> None:
    pr = predictor(0.1)
    w = sweep(*LEVELS)
    kept = attach(measured_at(pr, factor), {lv.label: pr.predict(w, lv) for lv in LEVELS})
    for lv in kept.levels:
        assert lv.predicted is not None and lv.predicted.band is not None
        assert lv.predicted.band.tpot_p50_s.inside is inside, (lv.label, factor)
    line = band_lines(kept)[0]
    assert f"TPOT p50 {2 if inside else 0} of 2" in line
    assert ("outside:" in line) is not inside


def test_the_report_states_the_band_and_draws_it(tmp_path: Path) -> None:
    from inferlab.jsonio import write_json
    from inferlab.report.inputs import render_run

    pr = predictor(0.1)
    w = sweep(*LEVELS)
    kept = attach(measured_at(pr, 1.3), {lv.label: pr.predict(w, lv) for lv in LEVELS})
    write_json(tmp_path / "summary.json", kept)
    html = render_run(tmp_path, kept).read_text()
    assert "Within the band (each prediction again at the machine&#x27;s speed +-10%" in html
    assert "TPOT p50 0 of 2" in html
    assert (tmp_path / "predicted_vs_measured.png").stat().st_size > 0


def test_an_open_loop_band_holds_the_base_prediction_and_goodput() -> None:
    pr = predictor(0.1)
    level = Level("rate", 3.0)
    p = pr.predict(sweep(level), level)
    assert p.band is not None
    for r, base in ((p.band.tpot_p50_s, p.tpot_s.p50), (p.band.ttft_p99_s, p.ttft_s.p99)):
        assert r.low is not None and r.high is not None and base is not None
        assert r.low <= base <= r.high
    g = p.band.goodput_requests_per_s
    assert g.low is not None and g.high is not None and g.low <= g.high
