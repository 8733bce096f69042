"""One verdict of where the time goes: watch, the report and the demo read one run alike."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from inferlab.metrics.decomposition import apply_engine_baseline
from inferlab.metrics.verdict import TimeNumbers, decide, engine_growth, engine_step
from inferlab.report.reading import read_sweep, sweep_verdict
from inferlab.servermetrics.snapshot import Snapshot
from inferlab.summary import RunSummary
from inferlab.watch.derive import EngineFloor, Live, Quantity, unknown
from inferlab.watch.frame import Watcher, live_verdict, reading
from tests.engines.baseline import engine
from tests.watch.helpers import physics, steady

SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"
# The llama-batched-bench on one thread (ms at batch 1..16)
ENGINE = {1: 0.0133, 2: 0.0245, 4: 0.0389, 8: 0.0635, 16: 0.1221}


def scripted(snaps: list[Snapshot]) -> Callable[[], Snapshot]:
    return lambda: snaps.pop(0)


def run() -> RunSummary:
    s = RunSummary.from_json(json.loads(SWEEP.read_text()))
    return apply_engine_baseline(s, engine(ENGINE, 0.0133))


def live_of(summary: RunSummary) -> Live:
    """What watch sees at the sweep's last level: its step, floor and the engine alone."""
    last = summary.levels[-1]
    eb = summary.engine_baseline
    assert eb is not None and last.comparison is not None and last.tpot_s.p50
    growth = engine_growth(eb)
    assert growth is not None
    blank = {f.name: unknown("not in this test") for f in dataclasses.fields(Live)}
    return Live(
        **blank
        | {
            "window_s": 10.0,
            "samples": 20,
            "floor_bound": "memory",
            "running": Quantity(16.0, "gauge"),
            "steps_per_s": Quantity(1 / last.tpot_s.p50, "counter"),
            "measured_step_s": Quantity(last.tpot_s.p50, "window / steps"),
            "floor_step_s": Quantity(last.comparison.predicted_step_time_s, "roofline"),
            "mbu": Quantity(0.05, "bytes"),
            "mfu": Quantity(0.3, "flops"),
            "engine_step_s": Quantity(engine_step(eb, 16), "engine-bench"),
            "engine_growth": Quantity(*growth),
        }
    )


def test_watch_report_and_demo_give_one_verdict_for_one_run() -> None:
    s = run()
    report = sweep_verdict(s)
    watch = live_verdict(live_of(s))
    assert report is not None and watch is not None
    assert (report.where, report.bound) == (watch.where, watch.bound) == ("kernels", "compute")
    assert report.sentence() == watch.sentence()
    # the report and the demo print read_sweep; watch prints its one-line reading
    lines = read_sweep(s)
    assert any(report.sentence() in line for line in lines)
    assert lines[0].startswith("Bound: at c=16, the time goes to the engine's own kernels")
    line = reading(live_of(s), Quantity(None, "no util"), "none")
    assert line.startswith(watch.sentence())
    assert "overhead (scheduling, launches, CPU)" not in line


def test_served_far_above_the_engine_is_serving() -> None:
    v = decide(TimeNumbers(served_s=0.030, floor_s=0.003, engine_s=0.010, growth=0.05))
    assert (v.where, v.bound) == ("serving", "memory")
    assert "each extra stream costs 5% of a lone step" in v.sentence()


def test_without_the_engine_alone_kernels_and_serving_are_not_told_apart() -> None:
    v = decide(TimeNumbers(served_s=0.012, floor_s=0.003))
    assert v.where == "above_floor" and v.bound == "unknown"
    assert "not measured to tell which" in v.sentence()
    assert decide(TimeNumbers(served_s=0.009, floor_s=0.003)).where == "floor"


def test_growth_share_from_the_engine() -> None:
    g = engine_growth(engine(ENGINE, 0.0133))
    assert g is not None
    assert g[0] == pytest.approx((0.1221 / 0.0133 - 1) / 15)
    assert g[1] == "engine alone, batch 1 -> 16"


def test_watch_with_an_engine_baseline_reads_the_engine_at_the_running_batch() -> None:
    ph = EngineFloor.of(physics(), engine(ENGINE, 0.0133))
    w = Watcher(scripted([steady(0), steady(10)]), ph, 10.0, lambda: (unknown("none"), "none"))
    w.tick()
    f = w.tick()  # 4 streams at one step per 50 ms; the engine alone takes 38.9 ms at batch 4
    # plus the window's prompts: 10 tok/s over 20 steps/s, at the engine's 0.17 s per 32 tokens
    assert f.live is not None
    assert f.live.engine_step_s.value == pytest.approx(0.0389 + 0.5 * 0.17 / 32)
    v = live_verdict(f.live)
    # floor 22 ms, kernels 38.9 - 22 = 16.9 ms, serving 50 - 38.9 = 11.1 ms: the floor leads
    assert v is not None and v.where == "floor" and v.bound == "compute"
    assert f.reading.startswith(v.sentence())
