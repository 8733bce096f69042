"""What the demo prints about its predictions: the SLO it judges by, each level's
prediction before the sweep, and predicted against measured after it, each quantity
graded against the measurement's own interval (metrics/scoring.py), and how far the
machine's speed moved since the profile (the drift canary, metrics/speed_shift.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.metrics.scoring import PREDICTED, tail_undersampled
from inferlab.report.interval_text import TAIL
from inferlab.units import fmt_duration

if TYPE_CHECKING:
    from inferlab.slo.grammar import Slo
    from inferlab.summary import (
        AtMeasuredSpeed,
        Grade,
        GradedQuantity,
        LevelSummary,
        Predicted,
        PredictedRange,
        RunSummary,
        SpeedShift,
    )

SLO_WHY = "150 ms per token ~ 7 tokens/s, reading speed; 2 s to the first token"


def slo_line(slo: Slo, given: bool) -> str:
    why = "given with --slo" if given else f"the demo's default: {SLO_WHY}"
    return (
        f"SLO {slo.text} ({why}); a level passes with >= {slo.min_attainment:.0%} of its "
        "requests within it; goodput = good requests/s"
    )


def prediction_lines(preds: dict[str, Predicted]) -> list[str]:
    """Before the sweep: what each level is predicted to measure."""
    lines = []
    for label, p in preds.items():
        good = (
            ""
            if p.goodput_requests_per_s is None
            else f", goodput {p.goodput_requests_per_s:.2f} req/s"
        )
        lines.append(
            f"predicted {label:>10}: TTFT p50 {fmt_duration(p.ttft_s.p50, 3)}, "
            f"p99 {fmt_duration(p.ttft_s.p99, 3)}; TPOT p50 {fmt_duration(p.tpot_s.p50, 3)}; "
            f"{p.tokens_per_s:.1f} tok/s{good}{band_note(p)}"
        )
    return lines


def _span(r: PredictedRange) -> str:
    if r.low is None or r.high is None:
        return "-"
    return f"{fmt_duration(r.low, 3)}-{fmt_duration(r.high, 3)}"


def band_note(p: Predicted) -> str:
    """A profiled prediction's band, in a few words (empty without one)."""
    b = p.band
    if b is None:
        return ""
    return (
        f" (at the machine's speed +-{b.speed_spread:.0%}: TTFT p50 {_span(b.ttft_p50_s)}, "
        f"TPOT p50 {_span(b.tpot_p50_s)})"
    )


ENGINE_ALONE = "engine alone, no serving overhead"
PROFILED = "the served profile: its step model and per-request costs"


def comparison_lines(summary: RunSummary, source: str = ENGINE_ALONE) -> list[str]:
    """After the sweep: predicted, measured and the error, per level and quantity."""
    from inferlab.report.predicted import prediction_table

    table = prediction_table(summary)
    if not table:
        return []
    return [
        f"predicted before measuring ({source}) vs measured; "
        "err = (predicted - measured) / measured:",
        *table,
    ]


# The graded quantities as the demo shows them: name, key, unit, scale, format.
GRADED = (
    ("TTFT p50", "ttft_p50_s", "ms", 1e3, ".0f"),
    ("TTFT p99", "ttft_p99_s", "ms", 1e3, ".0f"),
    ("TPOT p50", "tpot_p50_s", "ms", 1e3, ".1f"),
    ("goodput", "goodput_requests_per_s", "req/s", 1.0, ".2f"),
)
GRADE_RULE = (
    "graded: a quantity counts as predicted when |pred - meas| <= max(target x meas, the "
    "measured 95 % interval's half-width on the prediction's side): within_target, else "
    "within_noise (inside the interval), else miss; ungradable where that half-width is "
    "over twice the target (too few requests or too noisy to grade: never predicted)"
)


NOTHING_GRADED = (
    "nothing could be graded: every measured interval, on the prediction's side, is over "
    "twice its target (too few requests a level, or too noisy a machine); more requests a "
    "level narrow them (bench --requests-per-level, the demo's --requests-per-level)"
)


def _graded(lv: LevelSummary, key: str) -> GradedQuantity | None:
    got = lv.predicted.graded if lv.predicted is not None else None
    return next((g for g in got or () if g.quantity == key), None)


def _grade_cell(g: GradedQuantity | None, k: float, fmt: str, tail: bool = False) -> str:
    """The measured value, its interval where it has one (`?` above where too few
    requests bound it from above: `tail`), and the grade."""
    if g is None or g.measured is None:
        return "-" if g is None else g.grade
    if g.ci95 is None:
        return f"{g.measured * k:{fmt}} {g.grade}"
    hi = "?" if tail else f"{g.ci95[-1] * k:{fmt}}"
    return f"{g.measured * k:{fmt}} [{g.ci95[0] * k:{fmt}}-{hi}] {g.grade}"


def graded_lines(summary: RunSummary) -> list[str]:
    """After the comparison table: per level, each quantity measured with its 95 % interval
    and its grade; then per quantity how many levels were predicted and which missed."""
    levels = [lv for lv in summary.levels if lv.predicted is not None and lv.predicted.graded]
    if not levels:
        return []
    head = f"{'level':>10}  " + "  ".join(
        f"{f'{n} {u} meas [95 %]':<30}" for n, _, u, _, _ in GRADED
    )
    lines = [GRADE_RULE, head.rstrip()]
    tails = {  # the graded cells whose interval has no upper bound: they print `?`
        (lv.label, key)
        for lv in levels
        for _, key, *_ in GRADED
        if tail_undersampled(lv, key) and _graded(lv, key)
    }
    for lv in levels:
        cells = [
            f"{_grade_cell(_graded(lv, key), k, f, (lv.label, key) in tails):<30}"
            for _, key, _, k, f in GRADED
        ]
        lines.append(f"{lv.label:>10}  " + "  ".join(cells).rstrip())
    counts, misses = [], []
    for name, key, *_ in GRADED:
        got = [(lv.label, g) for lv in levels if (g := _graded(lv, key)) is not None]
        if not got:
            continue
        counts.append(_count_words(name, [g.grade for _, g in got]))
        misses += [f"{label} {name}" for label, g in got if g.grade == "miss"]
    tail = f"; missed: {', '.join(misses)}" if misses else ""
    lines.append(f"predicted: {', '.join(counts)} levels{tail}")
    grades = [g.grade for lv in levels for _, key, *_ in GRADED if (g := _graded(lv, key))]
    if grades and all(g == "ungradable" for g in grades):
        lines.append(NOTHING_GRADED)
    if tails:
        lines.append(TAIL)
    return lines


def _count_words(name: str, grades: list[Grade]) -> str:
    """ "TPOT p50 3 of 5 (1 within noise; 1 ungradable)": predicted of all graded."""
    hit = sum(1 for g in grades if g in PREDICTED)
    words: tuple[tuple[str, Grade], ...] = (
        ("within noise", "within_noise"),
        ("ungradable", "ungradable"),
    )
    notes = [f"{n} {word}" for word, grade in words if (n := grades.count(grade))]
    return f"{name} {hit} of {len(grades)}" + (f" ({'; '.join(notes)})" if notes else "")


def hit_ratio_lines(summary: RunSummary) -> list[str]:
    """The prefix-cache hit ratio predicted beside the server's, where either has one."""
    out = []
    for lv in summary.levels:
        pred = lv.predicted.prefix_hit_ratio if lv.predicted else None
        meas, implied = lv.prefix_cache_hit_ratio, lv.prefix_cache_hit_ratio_implied
        if pred is None and meas is None:
            continue
        shown = [f"{x:.0%}" if x is not None else "-" for x in (pred, meas, implied)]
        out.append(
            f"prefix cache hits {lv.label}: predicted {shown[0]}, server {shown[1]} "
            f"(a perfect cache: {shown[2]})"
        )
    return out


def profile_shift_words(s: SpeedShift) -> str:
    """The canary's move between the profile and the measurement, and whether it lies
    beyond both runs' own canary spread."""
    from inferlab.metrics.speed_shift import noise_words, ran

    ref, meas = s.reference_tpot_ms, s.measured_tpot_ms
    tail = "" if s.beyond_noise else ": the canary cannot tell the two speeds apart"
    return (
        f"the machine ran {ran(meas, ref)} during the measurement than during the profile "
        f"(canary {ref:.1f} -> {meas:.1f} ms), "
        f"{noise_words(s, ('profile', 'measurement'))}{tail}"
    )


def _at_cell(name: str, value: float | None, error: float | None, fmt: str) -> str:
    if value is None:
        return f"{name} -"
    err = "" if error is None else f" ({error * 100:+.0f} %)"
    return f"{name} {value * 1e3:{fmt}} ms{err}"


def at_speed_cells(a: AtMeasuredSpeed) -> str:
    """A prediction at the measurement's speed: TPOT p50, TTFT p50 and p99, each with its
    error against the measurement."""
    e = a.errors
    return ", ".join(
        (
            _at_cell("TPOT p50", a.tpot_s.p50, e.tpot_p50 if e else None, ".1f"),
            _at_cell("TTFT p50", a.ttft_s.p50, e.ttft_p50 if e else None, ".0f"),
            _at_cell("TTFT p99", a.ttft_s.p99, e.ttft_p99 if e else None, ".0f"),
        )
    )


def speed_lines(summary: RunSummary) -> list[str]:
    """The machine's speed since the profile (none where either run has no canary), and
    where it moved beyond noise, each level's prediction at the measurement's speed."""
    shift = next((s for s in summary.speed_shifts or () if s.against == "profile"), None)
    if shift is None:
        return []
    lines = [f"machine speed: {profile_shift_words(shift)}"]
    rows = [
        (lv.label, a)
        for lv in summary.levels
        if lv.predicted is not None and (a := lv.predicted.at_measured_speed) is not None
    ]
    if rows:
        lines.append(
            f"at the measurement's speed (every profiled cost x{shift.ratio:.2f}, the "
            "canary's ratio, re-simulated after measuring; stated as such, not graded):"
        )
        lines += [f"{label:>10}  {at_speed_cells(a)}" for label, a in rows]
    return lines
