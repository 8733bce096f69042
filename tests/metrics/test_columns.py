"""The column (numpy) level summary gives summarize_level's numbers for the same records."""

from __future__ import annotations

import random

import pytest

from inferlab.metrics.columns import RequestColumns, summarize_columns
from inferlab.metrics.level import summarize_level
from inferlab.records import RequestRecord


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
    expected = summarize_level("x", "rate", 2.0, recs)
    got = summarize_columns("x", "rate", 2.0, RequestColumns.from_records(recs))
    assert got == expected
    assert expected.requests_ok > 0 and expected.gap_s.n > 100


def test_no_ok_request() -> None:
    recs = [RequestRecord(0, "x", "measure", 1, 1, http_status=500)]
    got = summarize_columns("x", "concurrency", 1, RequestColumns.from_records(recs))
    assert got == summarize_level("x", "concurrency", 1, recs)
    assert got.requests_failed == 1 and got.ttft_s.n == 0
