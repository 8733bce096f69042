"""Predicted against measured, per level: the rows the demo prints and report.html shows.

A level carries `predicted` when it was predicted before it ran (the demo, from the
engine alone: sim/predict.py); its errors are (predicted - measured) / measured. The
errors and the counts within the band are metrics/scoring.py's.
"""

from __future__ import annotations

from inferlab.metrics.scoring import band_count
from inferlab.summary import LevelSummary, PredictionErrors, RunSummary

QUANTITIES = ("TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "tok/s", "goodput req/s")


def _fmt(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _err(x: float | None) -> str:
    return "-" if x is None else f"{x:+.0%}"


def _scale(x: float | None, k: float) -> float | None:
    return None if x is None else x * k


def level_cells(lv: LevelSummary) -> list[str]:
    """Predicted, measured and error of each quantity, in QUANTITIES' order."""
    p = lv.predicted
    assert p is not None
    e = p.errors or PredictionErrors(ttft_p50=None, ttft_p99=None, tpot_p50=None, tokens_per_s=None)
    good = lv.slo.goodput_requests_per_s if lv.slo else None
    triples = [
        (_scale(p.ttft_s.p50, 1e3), _scale(lv.ttft_s.p50, 1e3), e.ttft_p50, ".0f"),
        (_scale(p.ttft_s.p99, 1e3), _scale(lv.ttft_s.p99, 1e3), e.ttft_p99, ".0f"),
        (_scale(p.tpot_s.p50, 1e3), _scale(lv.tpot_s.p50, 1e3), e.tpot_p50, ".1f"),
        (p.tokens_per_s, lv.output_tokens_per_s_total, e.tokens_per_s, ".1f"),
        (p.goodput_requests_per_s, good, e.goodput_requests_per_s, ".2f"),
    ]
    out = []
    for pred, meas, err, fmt in triples:
        out += [_fmt(pred, fmt), _fmt(meas, fmt), _err(err)]
    return out


def prediction_rows(summary: RunSummary) -> tuple[list[str], list[list[str]]]:
    """The header and one row per predicted level: label, held out, then the triples."""
    head = ["level", "held out"]
    for q in QUANTITIES:
        head += [f"{q} pred", "meas", "err"]
    rows = [
        [lv.label, "yes" if lv.predicted.held_out else "fitted", *level_cells(lv)]
        for lv in summary.levels
        if lv.predicted is not None
    ]
    return head, rows


def prediction_table(summary: RunSummary) -> list[str]:
    """The same rows as fixed-width text lines (the demo's console)."""
    _, rows = prediction_rows(summary)
    if not rows:
        return []
    top = f"{'':>10} {'':>6}" + "".join(f"  {q:^20}" for q in QUANTITIES)
    sub = (
        f"{'level':>10} {'held':>6}"
        + "  "
        + "  ".join(f"{'pred':>6} {'meas':>6} {'err':>6}" for _ in QUANTITIES)
    )
    lines = [top, sub]
    for r in rows:
        cells = [f"{r[i]:>6} {r[i + 1]:>6} {r[i + 2]:>6}" for i in range(2, len(r), 3)]
        lines.append(f"{r[0]:>10} {'yes' if r[1] == 'yes' else 'no':>6}  " + "  ".join(cells))
    return lines


BANDED = (("TTFT p50", "ttft_p50_s"), ("TTFT p99", "ttft_p99_s"), ("TPOT p50", "tpot_p50_s"))


def band_lines(summary: RunSummary) -> list[str]:
    """After the sweep: how many measurements fell within their prediction's band (the
    prediction at the machine's speed +- the profile's spread), and which did not."""
    bands = [(lv, lv.predicted.band) for lv in summary.levels if lv.predicted and lv.predicted.band]
    if not bands:
        return []
    counts, outside = [], []
    for name, key in (*BANDED, ("goodput", "goodput_requests_per_s")):
        n = band_count((lv.label, getattr(b, key)) for lv, b in bands)
        if not n.judged:  # nothing to judge (no SLO: no goodput)
            continue
        counts.append(f"{name} {n.inside} of {n.judged}")
        outside += [f"{label} {name}" for label in n.outside]
    spread = bands[0][1].speed_spread
    return [
        f"within the band (each prediction again at the machine's speed +-{spread:.0%}, how far "
        f"it moved while profiled): {', '.join(counts)} levels"
        + (f"; outside: {', '.join(outside)}" if outside else "")
    ]


def preemption_lines(summary: RunSummary) -> list[str]:
    """Preemptions predicted beside the server's own count, where a level has both (vLLM
    counts them: vllm:num_preemptions; llama.cpp's slots never preempt)."""
    out = []
    for lv in summary.levels:
        pred = lv.predicted.preempted if lv.predicted else None
        meas = lv.server.preemptions if lv.server else None
        if pred is not None and meas is not None:
            out.append(f"preemptions {lv.label}: predicted {pred}, server {meas:g}")
    return out
