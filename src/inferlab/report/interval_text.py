"""A level's 95 % intervals in words and table cells: `53.1 ±2.4`, or both ends
`[49.0, 60.2]` where the interval is skewed, `[612.0, ?]` where too few requests bound a
high percentile from above, and the lines that say what they cover.

The rule: the half-width (high - low) / 2 after the value when the interval's shorter side
(value to its nearer end) is at least half its longer side; both ends otherwise, since a
± would hide which way it leans.
"""

from __future__ import annotations

from collections.abc import Callable

from inferlab.summary import Interval, LevelSummary, RunSummary

SKEW_RATIO = 0.5  # shorter side / longer side below this: both ends are printed

RULE = (
    "±: half-width of the 95 % interval (hierarchical bootstrap over repeats and "
    "requests); [low, high] where it is skewed (one side under half the other)"
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
    return out
