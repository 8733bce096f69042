"""Speculative decoding per level from vLLM's spec_decode_* counters (first to last scrape).

The two scrapes are a fixture written in vLLM's documented metric names (read from
vLLM's source with the search tool: vllm:spec_decode_num_drafts, _num_draft_tokens,
_num_accepted_tokens, Prometheus counters with the _total suffix), not a live vLLM.
"""

from __future__ import annotations

import pytest

from inferlab.servermetrics.dialects import parse_metrics
from inferlab.servermetrics.level_counts import summarize_server_level
from inferlab.servermetrics.sampler import Sample


def page(steps: int, drafts: int, draft_tokens: int, accepted: int) -> str:
    lab = '{engine="0",model_name="m"}'
    return "\n".join(
        [
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{lab} 4.0",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{lab} 0.0",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{lab} {steps * 4 + accepted}.0",
            "# TYPE vllm:iteration_tokens_total histogram",
            f"vllm:iteration_tokens_total_count{lab} {steps}.0",
            f"vllm:iteration_tokens_total_sum{lab} {steps * 4}.0",
            "# TYPE vllm:spec_decode_num_drafts_total counter",
            f"vllm:spec_decode_num_drafts_total{lab} {drafts}.0",
            "# TYPE vllm:spec_decode_num_draft_tokens_total counter",
            f"vllm:spec_decode_num_draft_tokens_total{lab} {draft_tokens}.0",
            "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
            f"vllm:spec_decode_num_accepted_tokens_total{lab} {accepted}.0",
            "",
        ]
    )


def test_acceptance_rate_and_length_are_level_deltas() -> None:
    # Before the level: 1000 drafts of 3 tokens, 1500 accepted (from an earlier level).
    # During it: 400 drafts, 1200 draft tokens, 900 accepted.
    a = parse_metrics(page(5000, 1000, 3000, 1500), 10.0, 1e9)
    b = parse_metrics(page(5400, 1400, 4200, 2400), 20.0, 1e9 + 10)
    samples = [Sample("c=4", "start", a, t_mono_s=10.0), Sample("c=4", "end", b, t_mono_s=20.0)]
    srv = summarize_server_level(samples, 4)
    assert srv is not None
    assert (srv.spec_drafts, srv.spec_draft_tokens, srv.spec_accepted_tokens) == (400, 1200, 900)
    assert srv.spec_acceptance_rate == pytest.approx(0.75)  # 900 / 1200
    assert srv.spec_mean_acceptance_length == pytest.approx(1 + 900 / 400)  # 3.25 per step
    assert srv.to_json()["spec_mean_acceptance_length"] == pytest.approx(3.25)


def test_no_speculation_leaves_the_fields_out() -> None:
    text = page(10, 0, 0, 0).replace("spec_decode", "not_spec")
    a, b = parse_metrics(text, 0.0, 1e9), parse_metrics(text, 1.0, 1e9 + 1)
    srv = summarize_server_level(
        [Sample("c=1", "start", a, t_mono_s=0.0), Sample("c=1", "end", b, t_mono_s=1.0)], 1
    )
    assert srv is not None and srv.spec_acceptance_rate is None
    assert "spec_acceptance_rate" not in srv.to_json()
