"""One scrape of a server's /metrics, normalised into inferlab's vocabulary.

Every engine (llama.cpp, vLLM, SGLang, TGI) publishes different names for the
same physics; a dialect maps its names onto these fields. A field the engine
does not publish is None, never 0: "unknown" and "zero" are different answers.
Counters are cumulative since the server started; compare two snapshots with
`delta` (a counter that went down means the server restarted).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, fields
from typing import Any

from inferlab.vocab import Dialect

COUNTERS = (
    "steps",  # engine forward passes (llama.cpp n_decode_total; vLLM iteration_tokens_total_count)
    "generation_tokens",
    "prompt_tokens",
    "preemptions",
    "prefix_cache_hit_tokens",
    "prefix_cache_query_tokens",
    "spec_draft_tokens",
    "spec_accepted_tokens",
    "spec_drafts",  # vLLM spec_decode_num_drafts: verify steps that carried a draft
    "estimated_read_bytes",  # vLLM --enable-mfu-metrics, per GPU
    "estimated_flops",  # vLLM --enable-mfu-metrics, per GPU
)
GAUGES = ("running", "waiting", "kv_cache_usage", "kv_capacity_tokens")
HISTOGRAMS = ("ttft_s", "itl_s", "e2e_s")


@dataclass(frozen=True, slots=True)
class Histogram:
    """Cumulative buckets as Prometheus sends them: (upper bound, count <= bound), +Inf last."""

    buckets: tuple[tuple[float, float], ...]
    count: float
    sum: float

    def minus(self, earlier: Histogram) -> Histogram | None:
        """The observations made between `earlier` and this one; None if bounds differ or reset."""
        if [b for b, _ in self.buckets] != [b for b, _ in earlier.buckets]:
            return None
        if self.count < earlier.count:
            return None
        pairs = tuple(
            (b, c - c0) for (b, c), (_, c0) in zip(self.buckets, earlier.buckets, strict=True)
        )
        return Histogram(pairs, self.count - earlier.count, self.sum - earlier.sum)

    def quantile(self, q: float) -> float | None:
        """Linear interpolation inside the bucket, as PromQL's histogram_quantile does."""
        if self.count <= 0 or not self.buckets:
            return None
        rank = q * self.count
        counts = [c for _, c in self.buckets]
        i = bisect.bisect_left(counts, rank)
        if i >= len(self.buckets):
            i = len(self.buckets) - 1
        upper, c_hi = self.buckets[i]
        if math.isinf(upper):  # in the +Inf bucket: the best we can say is the last bound
            return self.buckets[i - 1][0] if i > 0 else None
        lower, c_lo = (0.0, 0.0) if i == 0 else self.buckets[i - 1]
        if c_hi == c_lo:
            return upper
        return lower + (upper - lower) * (rank - c_lo) / (c_hi - c_lo)

    def to_json(self) -> dict[str, Any]:
        return {"buckets": [list(b) for b in self.buckets], "count": self.count, "sum": self.sum}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Histogram:
        # strict JSON writes the +Inf bound as null (jsonio): read it back as +Inf
        buckets = tuple((math.inf if b is None else float(b), float(c)) for b, c in d["buckets"])
        return cls(buckets, float(d["count"]), float(d["sum"]))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One scrape, normalised. Times: the client's monotonic clock and wall clock at the scrape."""

    dialect: Dialect
    t_mono_s: float
    t_unix_s: float
    # counters (cumulative since server start)
    steps: float | None = None
    generation_tokens: float | None = None
    prompt_tokens: float | None = None
    preemptions: float | None = None
    prefix_cache_hit_tokens: float | None = None
    prefix_cache_query_tokens: float | None = None
    spec_draft_tokens: float | None = None
    spec_accepted_tokens: float | None = None
    spec_drafts: float | None = None
    estimated_read_bytes: float | None = None
    estimated_flops: float | None = None
    # gauges (now)
    running: float | None = None
    waiting: float | None = None
    kv_cache_usage: float | None = None  # fraction 0..1
    kv_capacity_tokens: float | None = None
    # the server's own latency histograms
    ttft_s: Histogram | None = None
    itl_s: Histogram | None = None
    e2e_s: Histogram | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.to_json() if isinstance(v, Histogram) else v
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Snapshot:
        kw: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in d:
                continue
            v = d[f.name]
            kw[f.name] = Histogram.from_json(v) if f.name in HISTOGRAMS and v else v
        return cls(**kw)


@dataclass(frozen=True, slots=True)
class Delta:
    """What happened between two snapshots: counter increments over the wall time between them."""

    dt_s: float
    counters: dict[str, float | None]  # None: not published by this dialect
    histograms: dict[str, Histogram | None]
    reset: bool  # a counter went down: the server restarted between the scrapes


def delta(a: Snapshot, b: Snapshot) -> Delta:
    """b - a for every counter and histogram; a decrease marks a reset (server restart)."""
    counters: dict[str, float | None] = {}
    reset = False
    for name in COUNTERS:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            counters[name] = None
        elif y < x:
            reset, counters[name] = True, None
        else:
            counters[name] = y - x
    hists: dict[str, Histogram | None] = {}
    for name in HISTOGRAMS:
        h0, h1 = getattr(a, name), getattr(b, name)
        hists[name] = h1.minus(h0) if h0 is not None and h1 is not None else None
    return Delta(b.t_mono_s - a.t_mono_s, counters, hists, reset)
