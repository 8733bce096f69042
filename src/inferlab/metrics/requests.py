"""Per-request latency from raw event times: TTFT, E2E, TPOT and every inter-token gap."""

from __future__ import annotations

from dataclasses import dataclass

from inferlab.records import RequestRecord

NS = 1e-9


@dataclass(frozen=True, slots=True)
class RequestLatency:
    ttft_s: float  # sent -> first generated token
    e2e_s: float  # sent -> last token
    tpot_s: float | None  # (E2E - TTFT) / (N_out - 1)
    gaps_s: list[float]  # a k-token event's gap split into k gaps of gap/k
    multi_token_events: int
    queue_delay_s: float  # client-side: scheduled -> sent
    n_out: int


def latency(rec: RequestRecord) -> RequestLatency | None:
    if not rec.ok:
        return None
    ev = rec.event_ns
    ttft = (ev[0] - rec.send_ns) * NS
    e2e = (ev[-1] - rec.send_ns) * NS
    n_out = rec.n_out
    tpot = (e2e - ttft) / (n_out - 1) if n_out > 1 else None
    gaps: list[float] = []
    for i in range(1, len(ev)):
        k = rec.event_tokens[i]
        g = (ev[i] - ev[i - 1]) * NS / k
        gaps.extend([g] * k)
    multi = sum(1 for k in rec.event_tokens if k > 1)
    return RequestLatency(
        ttft, e2e, tpot, gaps, multi, max(0, rec.send_ns - rec.scheduled_ns) * NS, n_out
    )
