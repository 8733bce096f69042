"""A level's 95 % intervals in words and table cells: `53.1 ±2.4`, or both ends
`[49.0, 60.2]` where the interval is skewed, `[612.0, ?]` where too few requests bound a
high percentile from above, and the lines that say what they cover.

Two intervals, two claims, and the lines name each: the table's cells are `ci95`, where
the level's long-run value lies; `pi95` (two repeats or more), where the next run of the
level lands, is wider and printed under the table, one line a level.

The rule: the half-width (high - low) / 2 after the value when the interval's shorter side
(value to its nearer end) is at least half its longer side; both ends otherwise, since a
± would hide which way it leans.
"""

from __future__ import annotations

from collections.abc import Callable

from inferlab.metrics.intervals import pi_factor
from inferlab.summary import Interval, LevelSummary, RunSummary, Uncertainty

SKEW_RATIO = 0.5  # shorter side / longer side below this: both ends are printed

RULE = (
    "±: half-width of the 95 % confidence interval (ci95: where the level's long-run value "
    "lies; hierarchical bootstrap over repeats and requests); [low, high] where it is skewed "
    "(one side under half the other)"
)
PI_RULE = (
    "pi95: where the next run of the level lands (wider than ci95: the mean of the {n} "
    "repeats ± t(0.975, {df}) x s x sqrt(1 + 1/{n}) = {k:.2f} x s, s their standard "
    "deviation; never below 0; summary.json: pi95):"
)
NO_PI = "no pi95 (where the next run lands): one run says nothing of the next"
# The columns the narrow table shows with intervals: (name, quantity, scale, unit).
PI_SHOWN = (
    ("TTFT p50", "ttft_s.p50", 1e3, " ms"),
    ("TPOT p50", "tpot_s.p50", 1e3, " ms"),
    ("tok/s", "output_tokens_per_s_total", 1.0, ""),
)
ONE_REPEAT = (
    "intervals from one repeat cover request-to-request variation only, not the machine's "
    "drift between runs (bench --repeat 3 for that)"
)
ONE_PEER_RUN = (
    "intervals from one run cover request-to-request variation only, not the machine's "
    "drift between runs"
)
TAIL = (
    "?: too few requests to bound that percentile from above (a 95 % upper bound needs "
    "368 requests for p99, 72 for p95; summary.json: tail_undersampled)"
)
NONE_KEPT = "no intervals: this summary predates them (bench --repeat N gives them)"


def skewed(iv: Interval) -> bool:
    """True when one side of the interval is under SKEW_RATIO times the other."""
    lo, hi = iv.ci95[0], iv.ci95[-1]
    below, above = iv.value - lo, hi - iv.value
    longer = max(below, above)
    return longer > 0 and min(below, above) < SKEW_RATIO * longer


def with_interval(text: Callable[[float], str], iv: Interval | None, value: float | None) -> str:
    """A cell: the value as `text` gives it, then its interval by the rule above."""
    if value is None:
        return "-"
    if iv is None:
        return text(value)
    lo, hi = iv.ci95[0], iv.ci95[-1]
    if iv.tail_undersampled:  # too few requests to bound it from above (TAIL)
        return f"{text(value)} [{text(lo)}, ?]"
    if skewed(iv):
        return f"{text(value)} [{text(lo)}, {text(hi)}]"
    return f"{text(value)} ±{text((hi - lo) / 2)}"


def interval_of(lv: LevelSummary, quantity: str) -> Interval | None:
    """The level's interval of `quantity` ("ttft_s.p50"), None when it has none."""
    return lv.uncertainty.of(quantity) if lv.uncertainty is not None else None


def interval_lines(summary: RunSummary, tail_shown: bool = True) -> list[str]:
    """Under the table: the display rule, whether the intervals cover drift, or that the
    file has none (a measured run written before them); what `?` means where a table with
    such a cell is shown (`tail_shown`) and an interval is tail_undersampled."""
    made = [lv.uncertainty for lv in summary.levels if lv.uncertainty is not None]
    if not made:
        measured = not summary.simulated and not any(lv.source for lv in summary.levels)
        return [NONE_KEPT] if measured and summary.levels else []
    out = [RULE]
    peer = next((lv.source.tool for lv in summary.levels if lv.source is not None), None)
    if any(not u.covers_drift for u in made):
        out.append(ONE_REPEAT if peer is None else ONE_PEER_RUN)
    else:
        n = max(u.repeats for u in made)
        how = "interleaved" if peer is None else f"{peer}'s runs, back to back"
        out.append(f"{n} repeats per level, {how}: the intervals cover drift between runs")
    if tail_shown and any(iv.tail_undersampled for u in made for iv in u.intervals):
        out.append(TAIL)
    return out + prediction_lines(summary)


def _pi_cell(iv: Interval | None, scale: float, unit: str) -> str | None:
    if iv is None or iv.pi95 is None:
        return None
    return f"[{iv.pi95[0] * scale:.1f}, {iv.pi95[-1] * scale:.1f}]{unit}"


def _pi_line(label: str, u: Uncertainty) -> str | None:
    """`  c=1: TTFT p50 [20.1, 24.3] ms, ...`: the level's pi95 of the table's columns."""
    cells = [
        f"{name} {cell}"
        for name, q, scale, unit in PI_SHOWN
        if (cell := _pi_cell(u.of(q), scale, unit)) is not None
    ]
    return f"  {label}: {', '.join(cells)}" if cells else None


def prediction_lines(summary: RunSummary) -> list[str]:
    """Where the next run of each level lands (pi95), beside the table's ci95; or that
    one repeat gives none. Nothing for a summary without intervals."""
    levels = [(lv.label, lv.uncertainty) for lv in summary.levels if lv.uncertainty]
    lines = [x for label, u in levels if (x := _pi_line(label, u)) is not None]
    if not lines:
        return [NO_PI] if any(u.repeats < 2 for _, u in levels) else []
    n = max(u.repeats for _, u in levels)
    return [PI_RULE.format(n=n, df=n - 1, k=pi_factor(n)), *lines]
