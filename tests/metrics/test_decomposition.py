"""floor -> engine alone -> served per level: split, shares, reading, warnings, table, plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.jsonio import dumps, loads_strict
from inferlab.metrics.decomposition import apply_engine_baseline, read_engine, split_time
from inferlab.report.console import sweep_rows
from inferlab.summary import RunSummary
from tests.engines.baseline import engine

SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"


def sweep() -> RunSummary:
    s: RunSummary = RunSummary.from_json(json.loads(SWEEP.read_text()))
    return s


def served(s: RunSummary) -> dict[int, float]:
    return {int(lv.concurrency or 0): lv.tpot_s.p50 or 0.0 for lv in s.levels}


def scaled(s: RunSummary, k: float) -> RunSummary:
    """The sweep with an engine whose step is k x the served TPOT at every level."""
    t = served(s)
    return apply_engine_baseline(s, engine({b: k * x for b, x in t.items()}, k * t[1]))


def codes(s: RunSummary, code: str) -> list[str]:
    return [w.level for w in s.warnings if w.code == code]


def test_split_adds_up_and_names_the_largest_part() -> None:
    # The batch-1 row: floor 3.0 ms, engine alone 13.3 ms, served 13.8 ms.
    d = split_time(0.0138, 0.0133, 0.0006, 0.0030)
    assert d["kernel_overhead_s"] == pytest.approx(0.0103)
    assert d["serving_overhead_s"] == pytest.approx(0.0005)
    assert d["floor_share"] + d["kernel_share"] + d["serving_share"] == pytest.approx(1.0)
    assert d["kernel_share"] == pytest.approx(0.0103 / 0.0138)
    assert d["largest"] == "kernels"
    # A heavy server on a fast engine: serving dominates.
    assert split_time(0.030, 0.010, 0.0005, 0.008)["largest"] == "serving"
    # No floor: the engine's step is one part, compared with serving.
    d = split_time(0.020, 0.015, 0.0005, None)
    assert d["floor_s"] is None and d["kernel_overhead_s"] is None and d["largest"] == "engine"


def test_every_level_gets_a_split_and_no_warning_when_served_is_slower() -> None:
    s = scaled(sweep(), 0.9)
    for lv in s.levels:
        sp = lv.engine
        assert sp is not None and lv.comparison is not None
        assert sp.batch == lv.concurrency and sp.batch_source == "measured"
        assert sp.engine_step_time_s == pytest.approx(0.9 * sp.served_tpot_s)
        assert sp.floor_s == lv.comparison.predicted_step_time_s
        assert sp.serving_share == pytest.approx(0.1)
    assert not codes(s, "faster_than_engine") and not codes(s, "engine_workload_mismatch")
    assert s.engine_baseline is not None and s.engine_baseline.steps[0].batch == 1
    back = RunSummary.from_json(loads_strict(dumps(s)))  # strict JSON, read back typed
    assert back.levels[2].engine == s.levels[2].engine
    assert back.engine_baseline == s.engine_baseline


def test_served_clearly_below_the_engine_warns_only_beyond_noise() -> None:
    s = sweep()
    t = served(s)
    steps = {b: 0.9 * x for b, x in t.items()}
    steps[8] = t[8] * 1.5  # impossible: the server beat its own engine by a third
    steps[4] = t[4] * 1.005  # within the engine's measured noise (2 x 1% here)
    s = apply_engine_baseline(s, engine(steps, lone_step_s=0.9 * t[1]))
    assert codes(s, "faster_than_engine") == ["c=8"]
    assert "miscounted" in next(w.message for w in s.warnings if w.code == "faster_than_engine")


def test_workload_and_starved_engine_are_flagged() -> None:
    s = sweep()
    steps = {b: 0.5 * x for b, x in served(s).items()}
    s = apply_engine_baseline(s, engine(steps, steps[1], output_tokens=128, cpu_fraction=0.5))
    msgs = {w.code: w.message for w in s.warnings}
    assert "32 -> 128 tokens, the sweep 32 -> 64" in msgs["engine_workload_mismatch"]
    assert "50% of its threads' CPU time" in msgs["engine_starved"]


def test_engine_below_the_floor_is_flagged() -> None:
    s = sweep()
    cmp16 = s.levels[-1].comparison
    assert cmp16 is not None  # compute-bound at c=16 on this CPU: 18.9 ms
    steps = {b: 0.9 * x for b, x in served(s).items()}
    steps[16] = cmp16.predicted_step_time_s / 2
    s = apply_engine_baseline(s, engine(steps, steps[1]))
    assert codes(s, "engine_below_floor") == ["c=16"]


def test_level_outside_the_engine_batches_has_no_split() -> None:
    s = apply_engine_baseline(sweep(), engine({1: 0.011, 4: 0.03}, 0.011))
    got = {lv.label: lv.engine for lv in s.levels}
    c2 = got["c=2"]
    assert c2 is not None and c2.batch_source == "interpolated"
    assert c2.engine_step_time_s == pytest.approx(0.011 + (0.03 - 0.011) / 3)
    assert got["c=8"] is None and got["c=16"] is None
    assert "engine" not in s.levels[-1].to_json()  # absent, not null, when unknown


def test_reading_is_computed_from_the_numbers() -> None:
    s = scaled(sweep(), 0.95)
    lines = read_engine(s)
    t1 = served(s)[1]
    assert lines[0].startswith(f"Where the time goes at c=1: served {t1 * 1e3:.1f} ms")
    assert "the largest share is the engine's kernels" in lines[0]
    assert "serving adds 5% to 5%" in lines[1]
    assert f"TTFT p50 at c=1 is {s.levels[0].ttft_s.p50:.3g} s" in lines[2]
    # The engine under the floor and far under the served TPOT: serving is the largest part.
    s2 = apply_engine_baseline(sweep(), engine({b: 0.002 for b in served(s)}, 0.002))
    lines2 = read_engine(s2)
    assert "the largest share is serving" in lines2[0]
    assert lines2[1].startswith("A negative part")  # kernels < 0: engine under the floor
    assert read_engine(sweep()) == []  # no baseline, nothing to read


def test_table_shows_floor_engine_served_and_two_columns_without_engine() -> None:
    head, _ = sweep_rows(sweep())
    assert "floor ms" in head and "engine ms" not in head
    s = scaled(sweep(), 0.9)
    head, rows = sweep_rows(s)
    i = head.index("engine ms")
    assert head[i - 1 : i + 2] == ["floor ms", "engine ms", "TPOT p50 ms"]
    assert rows[0][i] == f"{0.9 * served(s)[1] * 1e3:.1f}"


def test_stacked_bar_plot_is_drawn(tmp_path: Path) -> None:
    from inferlab.report.plots import time_split

    assert time_split(sweep(), tmp_path / "none.png") is None
    path = time_split(scaled(sweep(), 0.9), tmp_path / "time_split.png")
    assert path is not None and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
