"""One level's statistics computed over columns (numpy arrays), not per record in Python.

The one level summariser (bench's records go through `RequestColumns.from_records`,
metrics.level). A level of an hour-long simulation holds tens of thousands of requests
and millions of token times, so the statistics are computed over flat arrays: every
request's event times one after the other, `offsets` marking where each request's run
begins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from inferlab.metrics.stats import latency_stats, latency_stats_in_place
from inferlab.records import RequestRecord
from inferlab.summary import LatencyStats, LevelSummary
from inferlab.vocab import LevelKind

NS = 1e-9
GAP_SLICE = 1 << 20  # events whose gaps are computed together (_kept_gaps_s)
Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[Any]  # float64


@dataclass(frozen=True, slots=True)
class RequestColumns:
    """The measured requests of one level, as arrays (one entry per request unless flat)."""

    ok: npt.NDArray[np.bool_]
    send_ns: Ints
    scheduled_ns: Ints
    offsets: Ints  # len n + 1: request i's events are event_ns[offsets[i]:offsets[i + 1]]
    event_ns: Ints  # flat
    event_tokens: Ints | None  # flat; None: one token per event
    n_out: Ints  # usage's completion tokens when reported, else the streamed count
    prompt_tokens: Floats  # NaN where the server did not say
    completion_tokens: Floats  # NaN where the server did not say
    early_stop: int
    streamed_tokens_mismatch: int
    malformed_events: int
    errors: tuple[str, ...]
    warmup: int = 0
    prompt_target: Ints | None = None  # the prompt lengths asked, where usage is missing

    @classmethod
    def from_records(cls, records: list[RequestRecord]) -> RequestColumns:
        m = [r for r in records if r.phase == "measure"]
        ok = [r.ok for r in m]
        lens = [len(r.event_ns) for r in m]
        return cls(
            ok=np.array(ok, dtype=bool),
            send_ns=np.array([r.send_ns for r in m], dtype=np.int64),
            scheduled_ns=np.array([r.scheduled_ns for r in m], dtype=np.int64),
            offsets=np.concatenate([[0], np.cumsum(lens, dtype=np.int64)]).astype(np.int64),
            event_ns=np.array([t for r in m for t in r.event_ns], dtype=np.int64),
            # one count per event (a failed request may keep counts for events it lost)
            event_tokens=np.array(
                [k for r in m for k in r.event_tokens[: len(r.event_ns)]], dtype=np.int64
            ),
            n_out=np.array([r.n_out for r in m], dtype=np.int64),
            prompt_tokens=_floats([r.prompt_tokens for r in m]),
            completion_tokens=_floats([r.completion_tokens for r in m]),
            early_stop=sum(1 for r in m if r.ok and r.early_stop),
            streamed_tokens_mismatch=sum(
                1 for r in m if r.ok and r.completion_tokens not in (None, r.streamed_tokens)
            ),
            malformed_events=sum(r.malformed_events for r in m),
            errors=tuple(r.error for r in m if r.error),
            warmup=len(records) - len(m),
            prompt_target=np.array([r.prompt_tokens_target for r in m], dtype=np.int64),
        )


def _floats(values: list[int | None]) -> Floats:
    return np.array([float("nan") if v is None else v for v in values], dtype=float)


def _stats(a: Floats) -> LatencyStats:
    return latency_stats(cast("Sequence[float]", a))  # an array is a sequence of floats


@dataclass(frozen=True, slots=True)
class _Latencies:
    """Per ok request (TTFT, E2E, TPOT, worst gap) and every inter-token gap, flat."""

    ttft_s: Floats
    e2e_s: Floats
    tpot_s: Floats  # only requests with a nonzero TPOT
    gaps_s: Floats
    worst_gap_s: Floats
    queue_delay_s: Floats


def _kept_gaps_s(event_ns: Ints, keep: npt.NDArray[np.bool_]) -> Floats:
    """diff(event_ns)[keep] in seconds, a slice of events at a time into the one array it
    returns: a simulated hour holds 14 million events, and fresh memory for an array of
    them (the diff, the mask's copy) costs more than the arithmetic; a slice's temporaries
    are small enough to be reused."""
    n = len(keep)
    out = np.empty(int(np.count_nonzero(keep)))
    w = 0
    for start in range(0, n, GAP_SLICE):
        end = min(start + GAP_SLICE, n)
        part = np.diff(event_ns[start : end + 1])[keep[start:end]]
        out[w : w + len(part)] = part  # to float, as astype(float)
        w += len(part)
    out *= NS
    return out


def _latencies(c: RequestColumns) -> _Latencies:
    idx = np.flatnonzero(c.ok)
    first, last = c.offsets[idx], c.offsets[idx + 1] - 1
    send = c.send_ns[idx]
    ttft = (c.event_ns[first] - send) * NS
    e2e = (c.event_ns[last] - send) * NS
    n_out = c.n_out[idx]
    many = n_out > 1
    tpot = (e2e[many] - ttft[many]) / (n_out[many] - 1)
    # Gaps: event i - event i-1 within one ok request; an event's gap is split
    # over the tokens it carries.
    keep = np.repeat(c.ok, np.diff(c.offsets))[1:]
    starts_at = c.offsets[1:-1]
    starts_at = starts_at[(starts_at > 0) & (starts_at < len(c.event_ns))]
    keep[starts_at - 1] = False  # a request's first event has no gap before it
    per_event = _kept_gaps_s(c.event_ns, keep)
    gaps = per_event
    if c.event_tokens is not None:
        k = c.event_tokens[1:][keep]
        if (k != 1).any():
            per_event = per_event / k
            gaps = np.repeat(per_event, k)
    counts = last - first  # gaps per ok request
    has = counts > 0
    starts = (np.cumsum(counts) - counts)[has]
    worst = np.maximum.reduceat(per_event, starts) if len(starts) else np.empty(0)
    qd = np.maximum(0, send - c.scheduled_ns[idx]) * NS
    return _Latencies(ttft, e2e, tpot[tpot != 0], gaps, worst, qd)


def _mean_active_streams(c: RequestColumns) -> float:
    idx = np.flatnonzero(c.ok & (np.diff(c.offsets) > 1))
    if not len(idx):
        return 0.0
    s, e = c.event_ns[c.offsets[idx]], c.event_ns[c.offsets[idx + 1] - 1]
    start, end = int(s.min()), int(e.max())
    if end <= start:
        return float(len(idx))
    return int((e - s).sum()) / (end - start)


def _median(a: Floats) -> float | None:
    a = a[~np.isnan(a)]
    return float(np.median(a)) if len(a) else None


def _prompt_tokens(c: RequestColumns) -> float | None:
    """The ok requests' prompt tokens: the server's usage, else the length asked."""
    used = c.prompt_tokens[c.ok]
    if c.prompt_target is not None:
        used = np.where(np.isnan(used), c.prompt_target[c.ok], used)
    return None if np.isnan(used).any() else float(used.sum())


def summarize_columns(
    label: str, kind: LevelKind, value: float, c: RequestColumns, stall_factor: float = 5.0
) -> LevelSummary:
    """The level summary (counts, percentiles, throughput) of one level's columns."""
    lat = _latencies(c)
    ok = c.ok
    # The gaps are partitioned in place, stats first (their mean needs the order), median
    # next: no copy of millions of gaps (lat.gaps_s is not read in order after this).
    gap_stats = latency_stats_in_place(lat.gaps_s)
    median_gap = float(np.median(lat.gaps_s, overwrite_input=True)) if len(lat.gaps_s) else 0.0
    threshold = stall_factor * median_gap
    out_tokens = int(c.n_out[ok].sum())
    window_s = 0.0
    if ok.any():
        t_end = int(c.event_ns[c.offsets[np.flatnonzero(ok) + 1] - 1].max())
        window_s = max((t_end - int(c.send_ns[ok].min())) * NS, 1e-9)
    multi = 0
    if c.event_tokens is not None:
        multi = int((c.event_tokens[np.repeat(ok, np.diff(c.offsets))] > 1).sum())
    n, n_ok = len(ok), int(ok.sum())
    return LevelSummary(
        label=label,
        concurrency=value if kind == "concurrency" else None,
        rate_per_s=None if kind == "concurrency" else value,
        requests_measured=n,
        requests_warmup=c.warmup,
        requests_ok=n_ok,
        requests_failed=n - n_ok,
        requests_early_stop=c.early_stop,
        errors=tuple(sorted(set(c.errors))[:5]),
        ttft_s=_stats(lat.ttft_s),
        tpot_s=_stats(lat.tpot_s),
        e2e_s=_stats(lat.e2e_s),
        gap_s=gap_stats,
        worst_gap_per_request_s=_stats(lat.worst_gap_s),
        stall_threshold_s=threshold,
        stall_count=int((lat.gaps_s > threshold).sum()) if len(lat.gaps_s) else 0,
        multi_token_events=multi,
        queue_delay_s=_stats(lat.queue_delay_s),
        output_tokens=out_tokens,
        window_s=window_s,
        output_tokens_per_s_total=out_tokens / window_s if window_s else 0.0,
        output_tokens_per_s_per_user=(
            1.0 / float(np.median(lat.tpot_s)) if len(lat.tpot_s) else 0.0
        ),
        mean_active_streams=_mean_active_streams(c),
        prompt_tokens_usage_p50=_median(c.prompt_tokens[ok]),
        completion_tokens_p50=_median(c.completion_tokens[ok]),
        streamed_tokens_mismatch=c.streamed_tokens_mismatch,
        malformed_events=c.malformed_events,
        requests_per_s=n_ok / window_s if window_s else None,
        total_tokens_per_s=(prompt + out_tokens) / window_s
        if window_s and (prompt := _prompt_tokens(c)) is not None
        else None,
    )


def request_latencies(records: list[RequestRecord]) -> dict[str, Floats]:
    """Per ok measured request: TTFT, TPOT (requests with one) and E2E in seconds, by the
    LevelSummary field that summarises them ("ttft_s", "tpot_s", "e2e_s")."""
    lat = _latencies(RequestColumns.from_records(records))
    return {"ttft_s": lat.ttft_s, "tpot_s": lat.tpot_s, "e2e_s": lat.e2e_s}
