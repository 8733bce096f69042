"""The throughput-vs-TPOT plot draws each point's 95 % interval where the summary has one
(TPOT p50 across, throughput up and down), and none on a summary written before them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from inferlab.metrics.runfolder import read_summary
from inferlab.report.plots import interval_bars, throughput_vs_tpot
from inferlab.summary import Interval, LevelSummary, RunSummary, Uncertainty

DATA = Path(__file__).parents[1] / "data"
SWEEP = DATA / "llama_cpu_sweep_summary.json"  # measured before intervals existed


def with_intervals(
    lv: LevelSummary, tpot: tuple[float, float], tput: tuple[float, float] | None
) -> LevelSummary:
    """The level with a TPOT p50 interval (and a throughput one) of these ends."""
    p50 = lv.tpot_s.p50
    assert p50
    ivs = [Interval(quantity="tpot_s.p50", value=p50, ci95=tpot)]
    if tput is not None:
        v = lv.output_tokens_per_s_total
        ivs.append(Interval(quantity="output_tokens_per_s_total", value=v, ci95=tput))
    u = Uncertainty(repeats=3, covers_drift=True, method="t", resamples=2000, intervals=tuple(ivs))
    return dataclasses.replace(lv, uncertainty=u)


def summary_with_intervals() -> RunSummary:
    run = read_summary(SWEEP)
    c1, c2, c4, *rest = run.levels  # TPOT p50 12.04 / 22.9 / 37.5 ms; c=1 68.27 tok/s
    c1 = with_intervals(c1, (0.0110, 0.0140), (60.0, 70.0))
    c4 = with_intervals(c4, (0.0365, 0.0400), None)
    return dataclasses.replace(run, levels=(c1, c2, c4, *rest))


def test_each_level_with_an_interval_gets_its_bar_and_the_others_none() -> None:
    levels = list(summary_with_intervals().levels)
    idx, below, above = interval_bars(levels, "tpot_s.p50", 1e3)
    assert idx == [0, 2]  # c=2, c=8, c=16 have none
    p1, p4 = levels[0].tpot_s.p50, levels[2].tpot_s.p50
    assert p1 and p4
    assert below == pytest.approx([(p1 - 0.0110) * 1e3, (p4 - 0.0365) * 1e3])
    assert above == pytest.approx([(0.0140 - p1) * 1e3, (0.0400 - p4) * 1e3])
    idx, below, above = interval_bars(levels, "output_tokens_per_s_total", 1.0)
    tput = levels[0].output_tokens_per_s_total
    assert (
        idx == [0]
        and below == pytest.approx([tput - 60.0])
        and above == pytest.approx([70.0 - tput])
    )


def drawn_bars(
    summary: RunSummary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> list[ErrorbarContainer]:
    """The error bars the plot drew (its figure kept from being closed)."""
    figures: list[Figure] = []
    monkeypatch.setattr(plt, "close", figures.append)
    path = throughput_vs_tpot(summary, [], tmp_path / "t.png")
    assert path.stat().st_size > 0
    (fig,) = figures
    return [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]


def test_the_plot_draws_tpot_bars_across_and_throughput_bars_up_and_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bars = drawn_bars(summary_with_intervals(), tmp_path, monkeypatch)
    assert [(c.has_xerr, c.has_yerr) for c in bars] == [(True, False), (False, True)]
    across = bars[0].lines[2][0].get_segments()  # one segment per level with an interval
    assert len(across) == 2
    lo, hi = across[0][:, 0]
    assert (lo, hi) == pytest.approx((11.0, 14.0))  # c=1's TPOT p50 interval, in ms


def test_an_old_summary_draws_its_points_without_bars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = read_summary(SWEEP)
    assert all(lv.uncertainty is None for lv in run.levels)
    assert drawn_bars(run, tmp_path, monkeypatch) == []
