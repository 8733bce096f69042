"""Predictions scored against measurements: errors, bands, inside or outside, targets.

The one place a prediction is graded, for everything that grades one: the demo (each
level's `predicted` block, made by sim/predict.py, gets its errors and its band's
verdicts here), `report` (the counts within the band) and benchmarks/predict_accuracy.py
(each held-out shape's errors and the targets it missed). It works on summary.py's
blocks (Predicted, PredictedBand, PredictionErrors, LevelSummary) and imports nothing
that predicts or measures.

- error: (predicted - measured) / measured, + = predicted higher; None where either side
  is missing or the measurement is 0. A held-out shape's quantity that is 0 on both
  sides (goodput with no good request) is exact: 0.0.
- band: the lowest and highest of a quantity over the same level predicted at the
  machine's speed and at +- the profile's speed spread; a measurement is inside when it
  falls within them (the bounds' own rounding aside).
- targets (issue 26): TPOT p50 10 %, TTFT p50 15 %, TTFT p99 25 %, goodput 10 % (or both 0).
- grade (issue 39): a quantity counts as predicted when |predicted - measured| <=
  max(target x measured, the measured 95 % interval's half-width on the prediction's
  side): `within_target` when the target holds it, else `within_noise` when the interval
  does, else `miss`. The half-width is the one on the error's side (high - measured for a
  prediction above, measured - low below), not the larger of the two: a percentile's
  interval is skewed (a p99's reaches far up, a TTFT's stops at the floor), and a
  prediction below the measurement is not made plausible by how far the interval reaches
  above it. So `within_noise` is exactly "inside the measured interval". A measurement
  without an interval (goodput; a summary written before intervals) is graded by its
  target alone.
- ungradable (issue 46): where that half-width exceeds twice the target (x measured), or
  the interval has no upper end on the prediction's side (too few requests to bound a
  percentile from above, `tail_undersampled`), the measurement is too noisy to say
  anything: any error inside it would count. Such a quantity is `ungradable`, never
  predicted, whatever its error; counts say how many.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from inferlab.jsonrecord import JsonRecord, optional
from inferlab.summary import (
    Grade,
    GradedQuantity,
    Interval,
    LevelSummary,
    Predicted,
    PredictedBand,
    PredictedRange,
    PredictionErrors,
    RunSummary,
)

# The largest |error| a held-out shape's quantity may have and count as predicted, by the
# key its row and its band give it.
TARGETS: dict[str, float] = {
    "tpot_p50_s": 0.10,
    "ttft_p50_s": 0.15,
    "ttft_p99_s": 0.25,
    "goodput_requests_per_s": 0.10,
}
TIMINGS = ("tpot_p50_s", "ttft_p50_s", "ttft_p99_s")  # judged only where one side has them
GOODPUT = "goodput_requests_per_s"  # judged unless 0 (or none) on both sides
# The measured interval (summary's `uncertainty`, metrics/repeats.py) of each quantity.
INTERVALS = {
    "tpot_p50_s": "tpot_s.p50",
    "ttft_p50_s": "ttft_s.p50",
    "ttft_p99_s": "ttft_s.p99",
    "tokens_per_s": "output_tokens_per_s_total",
}


def _rel(pred: float | None, meas: float | None) -> float | None:
    return (pred - meas) / meas if pred is not None and meas else None


def quantities(
    pred: Predicted, measured: LevelSummary
) -> dict[str, tuple[float | None, float | None]]:
    """Each quantity a prediction states, (predicted, measured), by its key."""
    good = measured.slo.goodput_requests_per_s if measured.slo else None
    return {
        "tpot_p50_s": (pred.tpot_s.p50, measured.tpot_s.p50),
        "ttft_p50_s": (pred.ttft_s.p50, measured.ttft_s.p50),
        "ttft_p99_s": (pred.ttft_s.p99, measured.ttft_s.p99),
        "goodput_requests_per_s": (pred.goodput_requests_per_s, good),
        "tokens_per_s": (pred.tokens_per_s, measured.output_tokens_per_s_total),
        "prefix_hit_ratio": (pred.prefix_hit_ratio, measured.prefix_cache_hit_ratio),
    }


def errors(pred: Predicted, measured: LevelSummary) -> PredictionErrors:
    """The prediction's relative errors against the level measured."""
    q = quantities(pred, measured)
    return PredictionErrors(
        ttft_p50=_rel(*q["ttft_p50_s"]),
        ttft_p99=_rel(*q["ttft_p99_s"]),
        tpot_p50=_rel(*q["tpot_p50_s"]),
        tokens_per_s=_rel(*q["tokens_per_s"]),
        goodput_requests_per_s=_rel(*q["goodput_requests_per_s"]),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Scored(JsonRecord):
    """One quantity of a held-out shape: predicted, measured, and the error between them
    (0.0 when both are 0); where known, the measurement's 95 % interval and the grade."""

    predicted: float | None
    measured: float | None
    error: float | None
    ci95: tuple[float, ...] | None = optional()
    grade: Grade | None = optional()  # None: no target, or not judged (`judged`)
    tail_undersampled: bool | None = optional()  # the interval has no upper end (True)


def measured_interval(measured: LevelSummary, key: str) -> Interval | None:
    """The measured level's interval of a quantity (by its key here), if it has one."""
    u, name = measured.uncertainty, INTERVALS.get(key)
    return u.of(name) if u is not None and name is not None else None


def measured_ci95(measured: LevelSummary, key: str) -> tuple[float, float] | None:
    """The measured level's 95 % interval of a quantity (by its key here), if it has one."""
    iv = measured_interval(measured, key)
    return None if iv is None else (iv.ci95[0], iv.ci95[-1])


def tail_undersampled(measured: LevelSummary, key: str) -> bool:
    """Whether the measured interval of a quantity (by its key here) is from too few
    requests to bound it from above (summary.Interval.tail_undersampled)."""
    iv = measured_interval(measured, key)
    return bool(iv is not None and iv.tail_undersampled)


def noise_half_width(
    predicted: float | None,
    measured: float | None,
    ci95: Sequence[float] | None,
    undersampled: bool = False,
) -> float | None:
    """The measured interval's half-width on the prediction's side: high - measured for a
    prediction at or above the measurement (infinite where `undersampled`: no upper end),
    measured - low below it (None: no interval)."""
    if ci95 is None or predicted is None or measured is None:
        return None
    if predicted >= measured:
        return math.inf if undersampled else ci95[-1] - measured
    return measured - ci95[0]


def gradable(width: float | None, measured: float | None, target: float) -> bool:
    """Whether an interval of this half-width (on the prediction's side) can grade: no
    wider than twice the target (x measured). No interval: the target alone grades."""
    return width is None or measured is None or width <= 2.0 * target * abs(measured)


def grade(
    predicted: float | None,
    measured: float | None,
    error: float | None,
    ci95: Sequence[float] | None,
    target: float,
    undersampled: bool = False,
) -> Grade:
    """ungradable (the interval on the prediction's side wider than twice the target),
    else within_target (|error| <= target), else within_noise (|predicted - measured|
    within that half-width), else miss (also where a side is missing)."""
    width = noise_half_width(predicted, measured, ci95, undersampled)
    if not gradable(width, measured, target):
        return "ungradable"
    if error is not None and abs(error) <= target:
        return "within_target"
    off = None if predicted is None or measured is None else abs(predicted - measured)
    return "within_noise" if width is not None and off is not None and off <= width else "miss"


def judged(key: str, predicted: float | None, measured: float | None) -> bool:
    """Whether a target judges the pair: a timing either side has (a one-token reply has
    no TPOT); goodput unless 0 (or none) on both sides."""
    if key == GOODPUT:
        return bool(predicted or measured)
    return key in TARGETS and (predicted is not None or measured is not None)


def scored(
    pred: float | None,
    meas: float | None,
    ci95: Sequence[float] | None = None,
    target: float | None = None,
    key: str = "",
    undersampled: bool = False,
) -> Scored:
    """The pair with its error (0 on both sides is exact) and, with a target, its grade
    where the target judges it (`undersampled`: the interval has no upper end)."""
    exact = pred == 0 and meas == 0
    error = 0.0 if exact else _rel(pred, meas)
    ci = None if ci95 is None else tuple(ci95)
    g = (
        grade(pred, meas, error, ci, target, undersampled)
        if target is not None and judged(key, pred, meas)
        else None
    )
    tail = True if undersampled and ci is not None else None
    return Scored(
        predicted=pred, measured=meas, error=error, ci95=ci, grade=g, tail_undersampled=tail
    )


def scored_quantities(pred: Predicted, measured: LevelSummary) -> dict[str, Scored]:
    """Every quantity of `quantities`, scored (with the measured interval and, for a
    target's quantity, the grade), in its order."""
    return {
        k: scored(
            p, m, measured_ci95(measured, k), TARGETS.get(k), k, tail_undersampled(measured, k)
        )
        for k, (p, m) in quantities(pred, measured).items()
    }


def graded(pred: Predicted, measured: LevelSummary) -> tuple[GradedQuantity, ...]:
    """Each target's quantity that the target judges, graded against the level measured."""
    out = []
    for k, s in scored_quantities(pred, measured).items():
        if s.grade is not None:
            out.append(
                GradedQuantity(
                    quantity=k,
                    predicted=s.predicted,
                    measured=s.measured,
                    ci95=s.ci95,
                    error=s.error,
                    target=TARGETS[k],
                    grade=s.grade,
                )
            )
    return tuple(out)


def target_name(key: str) -> str:
    """A target as `missed` names it: a timing by its key, goodput as "goodput"."""
    return "goodput" if key == GOODPUT else key


def missed(scores: Mapping[str, Scored]) -> list[str]:
    """The targets a shape missed, by `target_name`: graded a miss (from its numbers and
    interval, so a row written before grades is graded the same way); a timing neither
    side has, or goodput 0 (or none) on both sides, is not judged."""
    return [
        target_name(k)
        for k in TARGETS
        if judged(k, (s := scores[k]).predicted, s.measured) and regrade(k, s) == "miss"
    ]


PREDICTED: tuple[Grade, ...] = ("within_target", "within_noise")  # counted as predicted


def ungradable(scores: Mapping[str, Scored]) -> list[str]:
    """The targets a shape could not be graded on (by `target_name`): its measured interval
    on the prediction's side wider than twice the target. Never counted as predicted."""
    return [
        target_name(k)
        for k in TARGETS
        if judged(k, (s := scores[k]).predicted, s.measured) and regrade(k, s) == "ungradable"
    ]


def regrade(key: str, s: Scored) -> Grade:
    """A scored quantity graded again from its numbers and interval (rows written before
    grades, or before `ungradable`, are graded as now)."""
    return grade(s.predicted, s.measured, s.error, s.ci95, TARGETS[key], bool(s.tail_undersampled))


def as_close_as_repeat(pred_error: float, repeat_error: float) -> bool:
    """Whether a prediction came as close to the measurement as the same measurement made
    again did (the closest a prediction made before it can be expected to come)."""
    return abs(pred_error) <= abs(repeat_error)


def _range(values: Sequence[float | None]) -> PredictedRange:
    got = [v for v in values if v is not None]
    return (
        PredictedRange(low=min(got), high=max(got)) if got else PredictedRange(low=None, high=None)
    )


def band_of(spread: float, preds: Sequence[Predicted]) -> PredictedBand:
    """The lowest and highest of each quantity over the same level's predictions."""
    return PredictedBand(
        speed_spread=spread,
        ttft_p50_s=_range([p.ttft_s.p50 for p in preds]),
        ttft_p99_s=_range([p.ttft_s.p99 for p in preds]),
        tpot_p50_s=_range([p.tpot_s.p50 for p in preds]),
        goodput_requests_per_s=_range([p.goodput_requests_per_s for p in preds]),
    )


def _inside(r: PredictedRange, measured: float | None) -> PredictedRange:
    if r.low is None or r.high is None or measured is None:
        return r
    tol = 1e-9 * max(abs(r.high), 1e-12)  # the bounds' own rounding
    return dataclasses.replace(r, inside=r.low - tol <= measured <= r.high + tol)


def measured_band(band: PredictedBand, measured: LevelSummary) -> PredictedBand:
    """The band with, for each quantity, whether the measurement fell within it."""
    good = measured.slo.goodput_requests_per_s if measured.slo else None
    return dataclasses.replace(
        band,
        ttft_p50_s=_inside(band.ttft_p50_s, measured.ttft_s.p50),
        ttft_p99_s=_inside(band.ttft_p99_s, measured.ttft_s.p99),
        tpot_p50_s=_inside(band.tpot_p50_s, measured.tpot_s.p50),
        goodput_requests_per_s=_inside(band.goodput_requests_per_s, good),
    )


@dataclass(frozen=True, slots=True)
class BandCount:
    """Of one quantity's measurements judged against their bands (measured on both sides),
    how many fell inside, and the labels of those outside."""

    inside: int
    judged: int
    outside: tuple[str, ...]


def band_count(ranges: Iterable[tuple[str, PredictedRange]]) -> BandCount:
    """(label, range) pairs counted; a range never measured against is not judged."""
    seen = [(label, r) for label, r in ranges if r.inside is not None]
    return BandCount(
        inside=sum(1 for _, r in seen if r.inside),
        judged=len(seen),
        outside=tuple(label for label, r in seen if not r.inside),
    )


def with_prediction(measured: LevelSummary, pred: Predicted) -> LevelSummary:
    """The measured level carrying its prediction and the prediction's errors."""
    band = measured_band(pred.band, measured) if pred.band is not None else None
    return dataclasses.replace(
        measured,
        predicted=dataclasses.replace(
            pred, errors=errors(pred, measured), band=band, graded=graded(pred, measured)
        ),
    )


def attach(summary: RunSummary, preds: Mapping[str, Predicted]) -> RunSummary:
    """The measured summary with each level's prediction and its errors."""
    levels = tuple(
        with_prediction(lv, preds[lv.label]) if lv.label in preds else lv for lv in summary.levels
    )
    return dataclasses.replace(summary, levels=levels)
