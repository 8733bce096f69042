"""TTFT, TPOT and gaps from raw records, by hand."""

from __future__ import annotations

import pytest

from inferlab.metrics.level_summary import summarize_level
from inferlab.metrics.requests import latency
from inferlab.records import RequestRecord

MS = 1_000_000


def rec(
    events: list[int], tokens: list[int], usage: int | None = None, **kw: object
) -> RequestRecord:
    r = RequestRecord(
        request_id=0,
        level="c=1",
        phase="measure",
        prompt_tokens_target=32,
        max_tokens=sum(tokens),
        send_ns=0,
        event_ns=events,
        event_tokens=tokens,
        http_status=200,
        finish_reason="length",
        completion_tokens=usage,
    )
    for k, v in kw.items():
        setattr(r, k, v)
    return r


def test_ttft_e2e_tpot() -> None:
    r = rec([100 * MS, 110 * MS, 120 * MS, 150 * MS], [1, 1, 1, 1], usage=4)
    lat = latency(r)
    assert lat is not None
    assert lat.ttft_s == pytest.approx(0.100)
    assert lat.e2e_s == pytest.approx(0.150)
    assert lat.tpot_s == pytest.approx(0.050 / 3)  # (E2E - TTFT) / (N_out - 1)
    assert lat.gaps_s == pytest.approx([0.010, 0.010, 0.030])


def test_multi_token_event_split_into_k_gaps() -> None:
    r = rec([100 * MS, 110 * MS, 130 * MS], [1, 1, 2], usage=4)
    lat = latency(r)
    assert lat is not None
    assert lat.gaps_s == pytest.approx([0.010, 0.010, 0.010])
    assert lat.multi_token_events == 1
    assert lat.tpot_s == pytest.approx(0.030 / 3)


def test_usage_is_n_out_and_failed_request_has_no_latency() -> None:
    assert rec([1, 2], [1, 1], usage=7).n_out == 7
    assert latency(rec([1, 2], [1, 1], error="boom")) is None


def test_early_stop_flag() -> None:
    r = rec([1, 2], [1, 1], usage=2, finish_reason="stop")
    assert r.early_stop
    r2 = rec([1, 2], [1, 1], usage=2)
    r2.max_tokens = 5
    assert r2.early_stop


def test_stalls_counted_against_median_gap() -> None:
    ev = [i * 10 * MS for i in range(20)] + [19 * 10 * MS + 100 * MS]
    s = summarize_level("c=1", "concurrency", 1, [rec(ev, [1] * len(ev), usage=len(ev))]).to_json()
    assert s["stall_count"] == 1
    assert s["itl_s"]["max"] == pytest.approx(0.100)
    assert s["requests_ok"] == 1 and s["requests_early_stop"] == 0
