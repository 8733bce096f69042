"""The gap plots' log x axes (report.html's "Gap distribution (CDF)" and "Tail") label their
ticks in plain ms, never a minor tick, and no two labels run into each other (issue 45: gaps
within about a decade had every minor tick labelled, 2x10^1 3x10^1 ..., overlapping)."""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from inferlab.report.plots import gap_cdf


def drawn_gap_figure(lo_ms: float, hi_ms: float, tmp_path: Path, mp: pytest.MonkeyPatch) -> Figure:
    """The gap plots of two levels whose gaps run from `lo_ms` to `hi_ms`, drawn (kept from
    being closed)."""
    figures: list[Figure] = []
    mp.setattr(plt, "close", figures.append)
    spread_s = list(np.geomspace(lo_ms, hi_ms, 200) / 1e3)
    middle_s = list(np.full(50, math.sqrt(lo_ms * hi_ms)) / 1e3)
    gap_cdf({"c=1": spread_s, "c=4": middle_s}, tmp_path / "gap_cdf.png")
    (fig,) = figures
    fig.canvas.draw()
    return fig


def shown(ax: Axes, minor: bool) -> list[tuple[float, str]]:
    """(where, text) of each x tick label drawn inside the axis."""
    lo, hi = ax.get_xlim()
    ticks = ax.xaxis.get_minor_ticks() if minor else ax.xaxis.get_major_ticks()
    return [
        (t.get_loc(), t.label1.get_text())
        for t in ticks
        if lo <= t.get_loc() <= hi and t.label1.get_visible() and t.label1.get_text()
    ]


@pytest.mark.parametrize(
    ("lo_ms", "hi_ms"),
    [(0.5, 3000.0), (2.0, 150.0), (2.0, 40.0), (8.0, 40.0), (30.0, 200.0), (10.0, 15.0)],
)
def test_gap_axes_label_plain_ms_on_major_ticks_only(
    lo_ms: float, hi_ms: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fig = drawn_gap_figure(lo_ms, hi_ms, tmp_path, monkeypatch)
    axes = [ax for ax in fig.axes if ax.get_title() in ("Gap distribution (CDF)", "Tail")]
    assert len(axes) == 2
    for ax in axes:
        assert ax.get_xscale() == "log"
        assert shown(ax, minor=True) == []
        major = shown(ax, minor=False)
        assert len(major) >= 2, major  # enough to read a gap off
        assert all(text == f"{ms:g}" for ms, text in major), major
        if hi_ms / lo_ms > 100:  # several decades: decades alone
            assert all(math.log10(ms).is_integer() for ms, _ in major), major
        boxes = sorted(
            (
                t.label1.get_window_extent()
                for t in ax.xaxis.get_major_ticks()
                if (t.get_loc(), t.label1.get_text()) in major
            ),
            key=lambda b: b.x0,
        )
        assert all(a.x1 < b.x0 for a, b in pairwise(boxes)), "labels overlap"
