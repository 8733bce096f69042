"""What the demo prints about its predictions: the SLO it judges by, each level's
prediction before the sweep, and predicted against measured after it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.units import fmt_duration

if TYPE_CHECKING:
    from inferlab.slo.grammar import Slo
    from inferlab.summary import Predicted, PredictedRange, RunSummary

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
