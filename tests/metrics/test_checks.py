"""Honesty checks, each alone: the warning it raises, or none."""

from __future__ import annotations

import dataclasses

import pytest

from inferlab.metrics.checks import check_level
from inferlab.metrics.level_summary import summarize_level
from inferlab.physics.measured import IMPOSSIBLE_CAUSES
from inferlab.records import RequestRecord
from inferlab.summary import ClientStats

MS = 1_000_000


def _rec(i: int, **kw: object) -> RequestRecord:
    r = RequestRecord(
        request_id=i,
        level="c=1",
        phase="measure",
        prompt_tokens_target=4,
        max_tokens=3,
        send_ns=0,
        event_ns=[10 * MS, 20 * MS, 30 * MS],
        event_tokens=[1, 1, 1],
        http_status=200,
        finish_reason="length",
        prompt_tokens=4,
        completion_tokens=3,
    )
    for k, v in kw.items():
        setattr(r, k, v)
    return r


def _codes(
    records: list[RequestRecord], ceiling: float | None = None, client: ClientStats | None = None
) -> list[str]:
    s = summarize_level("c=1", "concurrency", 1, records)
    ws = check_level(s, records, 4, ceiling, client or ClientStats.idle())
    return [w.code for w in ws]


def test_a_clean_level_has_only_the_few_samples_note() -> None:
    assert _codes([_rec(0), _rec(1)]) == ["few_samples"]


def test_no_check_fires_on_a_clean_level_with_enough_samples() -> None:
    # every registered check is consulted, and none cries wolf
    assert _codes([_rec(i) for i in range(2000)]) == []


def test_each_distortion_is_named() -> None:
    recs = [
        _rec(0, finish_reason="stop"),
        _rec(1, prompt_tokens=9),
        _rec(2, cached_prompt_tokens=2),
        _rec(3, error="boom", event_ns=[]),
        _rec(4, completion_tokens=7),
    ]
    codes = _codes(recs)
    for code in (
        "early_stop",
        "prompt_tokens_off",
        "prefix_cache_hit",
        "requests_failed",
        "output_over_max",
        "token_count_mismatch",
    ):
        assert code in codes


def test_a_stream_read_at_one_instant_has_no_tpot_and_is_named() -> None:
    recs = [_rec(0), _rec(1, event_ns=[30 * MS] * 3)]  # all three tokens in one read
    s = summarize_level("c=1", "concurrency", 1, recs)
    assert s.tpot_s.n == 1 and s.tpot_s.p50 == pytest.approx(0.01)  # the other request's 10 ms only
    ws = check_level(s, recs, 4, None, ClientStats.idle())
    (w,) = [w for w in ws if w.code == "tpot_unseen"]
    assert w.severity == "warning" and w.message.startswith("1 of 2 requests")


def test_above_ceiling_uses_the_claim_check_and_its_causes() -> None:
    recs = [_rec(0)]  # 10 ms per token = 100 tok/s per user
    assert "above_ceiling" not in _codes(recs, ceiling=100.0)  # within the 0.1 % tolerance
    s = summarize_level("c=1", "concurrency", 1, recs)
    ws = check_level(s, recs, 4, 50.0, ClientStats.idle())
    w = next(w for w in ws if w.code == "above_ceiling")
    assert w.severity == "error" and all(c in w.message for c in IMPOSSIBLE_CAUSES)


def test_busy_client_is_flagged_by_lag_or_cpu() -> None:
    busy = dataclasses.replace(ClientStats.idle(), loop_lag_p99_s=0.02)
    assert "client_saturation" in _codes([_rec(0)], client=busy)
    hot = dataclasses.replace(ClientStats.idle(), cpu_fraction=0.9)
    assert "client_saturation" in _codes([_rec(0)], client=hot)
