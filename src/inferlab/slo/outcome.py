"""What an SLO looks at in one request: its latencies, its output tokens, and whether it worked.

Built from a `RequestRecord` (bench and the simulator both write them). TTFT counts the
first generated token of any kind, reasoning included (as AIPerf and guidellm count it);
TTFO is the first token of the answer. `itl_max_s` is the worst gap between two stream
chunks (a chunk may carry several tokens), while TPOT is per token: different things.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from inferlab.records import RequestRecord
from inferlab.slo.grammar import Metric

NS = 1e-9


@dataclass(frozen=True, slots=True)
class Outcome:
    """One measured request, as the SLO sees it. A failed request has ok=False and no times."""

    ok: bool
    send_s: float
    end_s: float
    output_tokens: int
    ttft_s: float | None = None
    tpot_s: float | None = None  # None with a single output token: nothing to hold to
    e2e_s: float | None = None
    itl_max_s: float | None = None  # None with a single chunk
    ttfo_s: float | None = None  # inf: it reasoned and never answered

    def value(self, metric: Metric) -> float | None:
        """The request's value on `metric`; None where the metric does not apply."""
        return {
            "ttft": self.ttft_s,
            "tpot": self.tpot_s,
            "e2e": self.e2e_s,
            "itl_max": self.itl_max_s,
            "ttfo": self.ttfo_s,
        }[metric]


def _ttfo_s(rec: RequestRecord) -> float | None:
    first_answer = rec.first_answer_ns
    if first_answer is not None:
        return (first_answer - rec.send_ns) * NS
    if rec.reasoning_tokens > 0:
        return math.inf  # all reasoning, no answer
    return (rec.event_ns[0] - rec.send_ns) * NS  # no reasoning: the first token answers


def outcome(rec: RequestRecord) -> Outcome:
    """The SLO's view of one record."""
    send_s = rec.send_ns * NS
    if not rec.ok:
        return Outcome(False, send_s, rec.end_ns * NS, 0)
    ev = rec.event_ns
    ttft = (ev[0] - rec.send_ns) * NS
    e2e = (ev[-1] - rec.send_ns) * NS
    n_out = rec.n_out
    gaps = [(b - a) * NS for a, b in zip(ev, ev[1:], strict=False)]
    return Outcome(
        ok=True,
        send_s=send_s,
        end_s=ev[-1] * NS,
        output_tokens=n_out,
        ttft_s=ttft,
        tpot_s=(e2e - ttft) / (n_out - 1) if n_out > 1 else None,
        e2e_s=e2e,
        itl_max_s=max(gaps) if gaps else None,
        ttfo_s=_ttfo_s(rec),
    )


def outcomes(records: list[RequestRecord]) -> list[Outcome]:
    """The measured requests of a level (warm-up left out)."""
    return [outcome(r) for r in records if r.phase == "measure"]
