"""Attainment in both conventions, goodput, pass/fail and the binding objective, from records
whose times the test sets."""

from __future__ import annotations

import json

import pytest

from inferlab.records import RequestRecord
from inferlab.slo.attainment import SloLevel, evaluate
from inferlab.slo.grammar import parse_slo
from inferlab.slo.outcome import outcome, outcomes

MS = 1_000_000  # ns


def rec(i: int, ttft_ms: float, gap_ms: float, n: int = 5, ok: bool = True) -> RequestRecord:
    send = i * 1000 * MS
    first = send + int(ttft_ms * MS)
    ev = [first + int(j * gap_ms * MS) for j in range(n)]
    return RequestRecord(
        request_id=i,
        level="c=1",
        phase="measure",
        prompt_tokens_target=8,
        max_tokens=n,
        send_ns=send,
        event_ns=ev if ok else [],
        event_tokens=[1] * n if ok else [],
        end_ns=ev[-1],
        http_status=200 if ok else 500,
        finish_reason="length" if ok else None,
        completion_tokens=n if ok else None,
        error=None if ok else "HTTP 500",
    )


def test_both_conventions_goodput_and_pass() -> None:
    # 10 requests: 6 fast, 2 slow first token, 2 failed.
    records = [rec(i, 100, 10) for i in range(6)]
    records += [rec(6, 900, 10), rec(7, 900, 10), rec(8, 0, 0, ok=False), rec(9, 0, 0, ok=False)]
    lv = evaluate(parse_slo("ttft=500ms"), outcomes(records))
    assert (lv.requests, lv.requests_ok, lv.requests_good) == (10, 8, 6)
    assert lv.attainment == pytest.approx(0.6)  # failed requests count as violations
    assert lv.attainment_successful == pytest.approx(0.75)  # over successful only
    (ttft,) = lv.objectives
    assert (ttft.attainment, ttft.attainment_successful) == (pytest.approx(0.6), 0.75)
    # window: first send (0 s) to the last token of request 7 (7 s + 0.9 s + 40 ms)
    assert lv.window_s == pytest.approx(7.94)
    assert lv.goodput_requests_per_s == pytest.approx(6 / 7.94)
    assert lv.goodput_tokens_per_s == pytest.approx(30 / 7.94)
    assert not lv.passed and lv.binding is not None and lv.binding.name == "ttft"
    assert lv.binding.describe(0.9) == "ttft=500 ms: 60% of requests within it < 90%"
    assert evaluate(parse_slo("ttft=500ms", 0.6), outcomes(records)).passed


def test_level_objective_and_binding_numbers() -> None:
    records = [rec(i, 100, 10 + i) for i in range(10)]  # TPOT 10..19 ms
    lv = evaluate(parse_slo("tpot_p50=20ms,ttft_p99=150ms"), outcomes(records))
    tpot, ttft = lv.objectives
    assert tpot.value_s == pytest.approx(0.0145) and tpot.holds
    assert ttft.value_s == pytest.approx(0.1) and ttft.holds
    assert lv.passed and lv.binding is tpot  # the tightest when it passes: 14.5/20 > 100/150
    lv = evaluate(parse_slo("tpot_p50=12ms"), outcomes(records))
    assert not lv.passed and lv.binding is not None
    assert lv.binding.describe(0.9) == "tpot_p50: 14.5 ms > 12 ms"
    assert lv.margin == pytest.approx(14.5 / 12 - 1)


def test_overall_attainment_binds_when_each_objective_holds() -> None:
    # 10 requests: one slow TTFT, another slow TPOT; each objective 90 %, together 80 %.
    records = [rec(i, 100, 10) for i in range(8)] + [rec(8, 900, 10), rec(9, 100, 90)]
    lv = evaluate(parse_slo("ttft=500ms,tpot=50ms"), outcomes(records))
    assert [o.holds for o in lv.objectives] == [True, True, False]
    assert lv.attainment == pytest.approx(0.8) and not lv.passed
    assert lv.binding is not None and lv.binding.name == "attainment"
    # it has no limit of its own: said as what it is, not as "attainment=0 ms"
    assert lv.binding.describe(0.9) == "every objective at once: 80% of requests within all < 90%"


def test_itl_max_is_per_chunk_and_tpot_per_token() -> None:
    r = rec(0, 100, 10, n=3)
    r.event_tokens = [1, 4, 4]  # 9 tokens in 3 chunks 10 ms apart
    r.completion_tokens = 9
    o = outcome(r)
    assert o.itl_max_s == pytest.approx(0.010)  # the worst gap between chunks
    assert o.tpot_s == pytest.approx(0.020 / 8)  # per token after the first


def test_ttfo_counts_the_first_answer_token() -> None:
    r = rec(0, 100, 10)
    assert outcome(r).ttfo_s == pytest.approx(0.1)  # no reasoning: the first token answers
    r.reasoning_tokens, r.first_answer_ns = 3, r.event_ns[3]
    o = outcome(r)
    assert o.ttft_s == pytest.approx(0.1) and o.ttfo_s == pytest.approx(0.13)
    r.first_answer_ns = None  # reasoned to the end, never answered
    lv = evaluate(parse_slo("ttfo=1s"), [outcome(r)])
    assert lv.attainment == 0.0


def test_slo_block_round_trips_strict_json() -> None:
    records = [rec(i, 100, 10) for i in range(3)] + [rec(3, 0, 0, ok=False)]
    lv = evaluate(parse_slo("ttft=500ms,tpot_p99=5ms"), outcomes(records))
    text = json.dumps(lv.to_json(), allow_nan=False)
    d = json.loads(text)
    assert d["pass"] is False and d["attainment"] == 0.75 and "goodput_tokens_per_s" in d
    assert SloLevel.from_json(d) == lv
