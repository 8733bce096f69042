"""Did B change against A beyond noise? Per level and quantity, B - A with its 95 %
interval, and one word: `faster`, `slower` or `within_noise`.

Computed from both runs' raw records, so runs made before `bench --repeat` compare too:
each side is resampled on its own (metrics/intervals.py: repeats with replacement, then
requests within each; requests only where a run has one repeat), and the difference's
interval is the percentile interval of the resampled differences. A difference is
within noise when its interval holds 0, or when it is no larger than either run's own
repeat spread (the range of the statistic over that run's repeats: what the machine moved
between repeats of the same measurement).

So the smallest change a comparison could call is, per quantity, the larger of that spread
and about the half-width of the difference's interval (`smallest_detectable`, a share of
A): a change under it reads within_noise whatever its cause.

Throughput (output tok/s over the level's window) is resampled over repeats where a side
has two or more; with one, the window cannot be resampled, so its interval comes from the
requests' own decode rates (n_out / E2E), whose relative spread scales the measured value.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

from inferlab.metrics.columns import Floats, request_latencies
from inferlab.metrics.intervals import RESAMPLES, SEED, ci_of, resampled_percentiles
from inferlab.metrics.stats import MIN_SAMPLES
from inferlab.records import RequestRecord

Verdict = Literal["faster", "slower", "within_noise"]
LATENCIES: tuple[tuple[str, str, float], ...] = (
    ("ttft_s", "p50", 50.0),
    ("ttft_s", "p99", 99.0),
    ("tpot_s", "p50", 50.0),
    ("tpot_s", "p99", 99.0),
    ("e2e_s", "p50", 50.0),
)
THROUGHPUT = "output_tokens_per_s_total"


@dataclass(frozen=True, slots=True)
class QuantityDiff:
    """One quantity of one level on both sides, B - A with its interval, and the verdict."""

    level: str
    quantity: str  # "tpot_s.p50", "output_tokens_per_s_total"
    a: float
    b: float
    diff: float  # b - a, in the quantity's unit
    ci95: tuple[float, float]
    spread: float  # the larger of the two runs' repeat ranges (0: one repeat each)
    verdict: Verdict
    samples: int = 0  # requests behind the statistic on the side with fewer

    @property
    def thin(self) -> bool:
        """A percentile with too few requests behind it to mean much (stats.MIN_SAMPLES)."""
        stat = self.quantity.rpartition(".")[2]
        return 0 < self.samples < MIN_SAMPLES.get(stat, 0)

    @property
    def relative(self) -> float | None:
        """(B - A) / A; None where A is 0."""
        return self.diff / self.a if self.a else None

    @property
    def lower_is_better(self) -> bool:
        """Latencies: larger is slower; throughput: smaller is slower."""
        return self.quantity != THROUGHPUT

    @property
    def slower_by(self) -> float:
        """How much slower B is, as a fraction of A (negative: faster): the gate's measure,
        the change itself for a latency and its negation for throughput (tok/s 100 -> 54 is
        0.46 slower). Never printed as the change: that is `relative` (-0.46 there)."""
        rel = self.relative or 0.0
        return rel if self.lower_is_better else -rel

    @property
    def smallest_detectable(self) -> float | None:
        """The smallest change, as a share of A, that this comparison could have called:
        `judge` calls nothing within the runs' repeat spread, nor (about) within the
        half-width of the difference's interval, which must leave 0 out. None where A is 0."""
        if not self.a:
            return None
        lo, hi = self.ci95
        return max(self.spread, (hi - lo) / 2) / abs(self.a)

    def to_json(self) -> dict[str, object]:
        d: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        spread = d.pop("spread")
        return {
            **d,
            "ci95": list(self.ci95),
            "relative": self.relative,
            "repeat_spread": spread,
            "smallest_detectable_change": self.smallest_detectable,
        }


def judge(diff: float, low: float, high: float, spread: float, lower_is_better: bool) -> Verdict:
    """within_noise when the interval holds 0 or |diff| <= spread; else which way B went."""
    if low <= 0.0 <= high or abs(diff) <= spread:
        return "within_noise"
    worse = diff > 0 if lower_is_better else diff < 0
    return "slower" if worse else "faster"


def _spread(values: list[float]) -> float:
    return float(max(values) - min(values)) if len(values) > 1 else 0.0


def _measured(records: list[RequestRecord]) -> list[list[RequestRecord]]:
    """A level's measured records split by repeat (records without one are repeat 0)."""
    groups: dict[int, list[RequestRecord]] = {}
    for r in records:
        if r.phase == "measure":
            groups.setdefault(r.repeat, []).append(r)
    return [groups[k] for k in sorted(groups)]


@dataclass(frozen=True, slots=True)
class _Side:
    """One run's level: its statistic, resampled statistics and per-repeat values."""

    value: float
    resampled: Floats
    per_repeat: list[float]
    samples: int


def _latency_side(groups: list[Floats], pct: float, seed: int) -> _Side | None:
    kept = [g for g in groups if len(g)]
    if not kept:
        return None
    res = resampled_percentiles(kept, [pct], seed=seed)[:, 0]
    per = [float(np.percentile(g, pct)) for g in kept]
    pooled = np.concatenate(kept)
    return _Side(float(np.percentile(pooled, pct)), res, per, len(pooled))


def _throughput_side(groups: list[list[RequestRecord]], seed: int) -> _Side | None:
    """tok/s: tokens / window per repeat; resampled over repeats, or over requests' rates."""
    tokens, windows, rates = [], [], []
    for g in groups:
        ok = [r for r in g if r.ok]
        if not ok:
            continue
        t0, t1 = min(r.send_ns for r in ok), max(r.event_ns[-1] for r in ok)
        tokens.append(float(sum(r.n_out for r in ok)))
        windows.append(max((t1 - t0) * 1e-9, 1e-9))
        rates += [r.n_out / max((r.event_ns[-1] - r.send_ns) * 1e-9, 1e-9) for r in ok]
    if not tokens:
        return None
    value = sum(tokens) / max(sum(windows), 1e-9)
    per = [t / max(w, 1e-9) for t, w in zip(tokens, windows, strict=True)]
    rng = np.random.default_rng(seed)
    if len(tokens) > 1:
        pick = rng.integers(0, len(tokens), (RESAMPLES, len(tokens)))
        res = np.asarray(tokens)[pick].sum(1) / np.maximum(np.asarray(windows)[pick].sum(1), 1e-9)
    else:
        r = np.asarray(rates)
        res = value * r[rng.integers(0, len(r), (RESAMPLES, len(r)))].mean(1) / r.mean()
    return _Side(value, res, per, len(rates))


def _diff(level: str, quantity: str, a: _Side, b: _Side, lower_is_better: bool) -> QuantityDiff:
    d = b.value - a.value
    ci = ci_of(d, b.resampled - a.resampled, lower=None)
    spread = max(_spread(a.per_repeat), _spread(b.per_repeat))
    verdict = judge(d, ci.low, ci.high, spread, lower_is_better)
    n = min(a.samples, b.samples)
    return QuantityDiff(level, quantity, a.value, b.value, d, (ci.low, ci.high), spread, verdict, n)


def compare_level(
    level: str, a_records: list[RequestRecord], b_records: list[RequestRecord]
) -> list[QuantityDiff]:
    """Every quantity both sides have at this level, judged (empty when one has none)."""
    ga, gb = _measured(a_records), _measured(b_records)
    la, lb = [request_latencies(g) for g in ga], [request_latencies(g) for g in gb]
    out: list[QuantityDiff] = []
    for field, stat, pct in LATENCIES:
        sa = _latency_side([x[field] for x in la], pct, SEED)
        sb = _latency_side([x[field] for x in lb], pct, SEED + 1)  # independent draws
        if sa is not None and sb is not None:
            out.append(_diff(level, f"{field}.{stat}", sa, sb, lower_is_better=True))
    ta, tb = _throughput_side(ga, SEED), _throughput_side(gb, SEED + 1)
    if ta is not None and tb is not None:
        out.append(_diff(level, THROUGHPUT, ta, tb, lower_is_better=False))
    return out
