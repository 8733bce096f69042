"""One load level's records -> the summary block that summary.json and the console show."""

from __future__ import annotations

import statistics

from inferlab.metrics.requests import NS, RequestLatency, latency, mean_active_streams
from inferlab.metrics.stats import latency_stats
from inferlab.records import RequestRecord
from inferlab.summary import LevelSummary


def summarize_level(
    label: str,
    kind: str,
    value: float,
    records: list[RequestRecord],
    stall_factor: float = 5.0,
) -> LevelSummary:
    measured = [r for r in records if r.phase == "measure"]
    lats: list[RequestLatency] = [x for r in measured if (x := latency(r)) is not None]
    ok = [r for r in measured if r.ok]
    gaps = [g for x in lats for g in x.gaps_s]
    median_gap = statistics.median(gaps) if gaps else 0.0
    threshold = stall_factor * median_gap
    stalls = sum(1 for g in gaps if g > threshold) if gaps else 0
    worst = [max(x.gaps_s) for x in lats if x.gaps_s]
    tpots = [x.tpot_s for x in lats if x.tpot_s]
    out_tokens = sum(x.n_out for x in lats)
    if ok:
        t_start = min(r.send_ns for r in ok)
        t_end = max(r.event_ns[-1] for r in ok)
        window_s = max((t_end - t_start) * NS, 1e-9)
    else:
        window_s = 0.0
    return LevelSummary(
        label=label,
        concurrency=value if kind == "concurrency" else None,
        rate_per_s=None if kind == "concurrency" else value,
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
        worst_gap_per_request_s=latency_stats(worst),
        stall_threshold_s=threshold,
        stall_count=stalls,
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
            1
            for r in ok
            if r.completion_tokens is not None and r.completion_tokens != r.streamed_tokens
        ),
        malformed_events=sum(r.malformed_events for r in measured),
    )


def _median(values: list[int | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return float(statistics.median(vs)) if vs else None
