"""The one (numpy) level summariser gives, for random records, the numbers a plain
per-record computation gives (the reference below, kept here as the test's oracle)."""

from __future__ import annotations

import random
import statistics

import pytest

from inferlab.metrics.columns import RequestColumns, summarize_columns
from inferlab.metrics.level_summary import summarize_level
from inferlab.metrics.requests import NS, latency
from inferlab.metrics.stats import latency_stats
from inferlab.records import RequestRecord
from inferlab.summary import LevelSummary


def mean_active_streams(records: list[RequestRecord]) -> float:
    """Time-weighted number of streams decoding (first token -> last) over the window."""
    spans = [(r.event_ns[0], r.event_ns[-1]) for r in records if r.ok and len(r.event_ns) > 1]
    if not spans:
        return 0.0
    start = min(s for s, _ in spans)
    end = max(e for _, e in spans)
    if end <= start:
        return float(len(spans))
    return sum(e - s for s, e in spans) / (end - start)


def _median(values: list[int | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return float(statistics.median(vs)) if vs else None


def reference(label: str, value: float, records: list[RequestRecord]) -> LevelSummary:
    """Record by record, in plain Python (the summariser bench used before the fold)."""
    measured = [r for r in records if r.phase == "measure"]
    lats = [x for r in measured if (x := latency(r)) is not None]
    ok = [r for r in measured if r.ok]
    gaps = [g for x in lats for g in x.gaps_s]
    threshold = 5.0 * (statistics.median(gaps) if gaps else 0.0)
    tpots = [x.tpot_s for x in lats if x.tpot_s]
    out_tokens = sum(x.n_out for x in lats)
    window_s = 0.0
    if ok:
        t_end = max(r.event_ns[-1] for r in ok)
        window_s = max((t_end - min(r.send_ns for r in ok)) * NS, 1e-9)
    return LevelSummary(
        label=label,
        rate_per_s=value,
        requests_measured=len(measured),
        requests_warmup=len(records) - len(measured),
        requests_ok=len(ok),
        requests_failed=len(measured) - len(ok),
        requests_early_stop=sum(1 for r in ok if r.early_stop),
        errors=tuple(sorted({r.error for r in measured if r.error})[:5]),
        ttft_s=latency_stats([x.ttft_s for x in lats]),
        tpot_s=latency_stats(tpots),
        e2e_s=latency_stats([x.e2e_s for x in lats]),
        gap_s=latency_stats(gaps),
        worst_gap_per_request_s=latency_stats([max(x.gaps_s) for x in lats if x.gaps_s]),
        stall_threshold_s=threshold,
        stall_count=sum(1 for g in gaps if g > threshold),
        multi_token_events=sum(x.multi_token_events for x in lats),
        queue_delay_s=latency_stats([x.queue_delay_s for x in lats]),
        output_tokens=out_tokens,
        window_s=window_s,
        output_tokens_per_s_total=out_tokens / window_s if window_s else 0.0,
        output_tokens_per_s_per_user=(1.0 / statistics.median(tpots)) if tpots else 0.0,
        mean_active_streams=mean_active_streams(ok),
        prompt_tokens_usage_p50=_median([r.prompt_tokens for r in ok]),
        completion_tokens_p50=_median([r.completion_tokens for r in ok]),
        streamed_tokens_mismatch=sum(
            1 for r in ok if r.completion_tokens not in (None, r.streamed_tokens)
        ),
        malformed_events=sum(r.malformed_events for r in measured),
        requests_per_s=len(ok) / window_s if window_s else None,
        total_tokens_per_s=(
            sum(r.prompt_tokens_target if r.prompt_tokens is None else r.prompt_tokens for r in ok)
            + out_tokens
        )
        / window_s
        if window_s
        else None,
    )


def random_records(seed: int, n: int = 300) -> list[RequestRecord]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        events = rng.choice([0, 1, 2, 5, 30])
        t, ev = rng.randint(0, 10**9), []
        for _ in range(events):
            t += rng.randint(1, 10**7)
            ev.append(t)
        out.append(
            RequestRecord(
                i,
                "x",
                rng.choice(["measure"] * 5 + ["warmup"]),
                10,
                30,
                scheduled_ns=rng.randint(0, 10**8),
                send_ns=rng.randint(0, 10**8),
                event_ns=ev,
                event_tokens=[rng.choice([1, 1, 1, 3]) for _ in ev],
                http_status=rng.choice([200, 200, 500]),
                finish_reason=rng.choice(["length", "stop"]),
                prompt_tokens=rng.choice([None, 10, 11]),
                completion_tokens=rng.choice([None, events, 30]),
                error=rng.choice([None] * 5 + ["boom"]),
                malformed_events=rng.choice([0, 1]),
            )
        )
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_columns_equal_records(seed: int) -> None:
    recs = random_records(seed)
    expected = reference("x", 2.0, recs)
    got = summarize_columns("x", "rate", 2.0, RequestColumns.from_records(recs))
    assert got == expected
    assert summarize_level("x", "rate", 2.0, recs) == expected
    assert expected.requests_ok > 0 and expected.gap_s.n > 100


def test_no_ok_request() -> None:
    recs = [RequestRecord(0, "x", "measure", 1, 1, http_status=500)]
    got = summarize_columns("x", "concurrency", 1, RequestColumns.from_records(recs))
    assert got == summarize_level("x", "concurrency", 1, recs)
    assert got.requests_failed == 1 and got.ttft_s.n == 0
