"""What a level reports of its load, from records and schedules the test writes itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from inferlab.bench.loadstats import LAG_WARN_S, load_block, server_hit_ratio
from inferlab.bench.materialise import schedule_s
from inferlab.load.spec import Level, columns
from inferlab.metrics.level_summary import summarize_level
from inferlab.records import RequestRecord

MS = 1_000_000


def _rec(i: int, scheduled_ms: float, late_ms: float, **kw: Any) -> RequestRecord:
    sched = int((1000 + scheduled_ms) * MS)  # a level starts after the run origin
    send = sched + int(late_ms * MS)
    return RequestRecord(
        request_id=i,
        level="rate=10/s",
        phase="measure",
        prompt_tokens_target=8,
        max_tokens=3,
        scheduled_ns=sched,
        send_ns=send,
        event_ns=[send + 10 * MS, send + 20 * MS, send + 30 * MS],
        event_tokens=[1, 1, 1],
        end_ns=send + 30 * MS,
        http_status=200,
        finish_reason="length",
        completion_tokens=3,
        **kw,
    )


def test_offered_achieved_and_schedule_lag() -> None:
    late = [0.0, 0.5, 1.0, 9.0]  # the last request left 9 ms late
    recs = [_rec(i, 100 * i, x) for i, x in enumerate(late)]
    s = summarize_level("rate=10/s", "rate", 10.0, recs, 5.0)
    s, warns = load_block(s, recs, shares=False, implied=None)
    assert s.offered_rate_per_s == pytest.approx(10.0)  # 3 gaps over 300 ms
    assert s.achieved_rate_per_s == pytest.approx(3 / 0.309)
    assert s.schedule_lag_s is not None and s.schedule_lag_s.max == pytest.approx(0.009)
    assert [w.code for w in warns] == ["schedule_lag"] and LAG_WARN_S == 0.005
    on_time = [_rec(i, 100 * i, 0.2) for i in range(4)]
    s2 = summarize_level("rate=10/s", "rate", 10.0, on_time, 5.0)
    assert load_block(s2, on_time, shares=False, implied=None)[1] == []


def test_hit_ratio_the_server_saw_beside_the_one_implied() -> None:
    recs = [
        _rec(0, 0, 0, prompt_tokens=100, cached_prompt_tokens_server=0),
        _rec(1, 100, 0, prompt_tokens=100, cached_prompt_tokens_server=60),
        _rec(2, 200, 0, prompt_tokens=100, cached_prompt_tokens=30),  # usage details only
    ]
    assert server_hit_ratio(recs) == pytest.approx(0.3)
    s = summarize_level("c=1", "concurrency", 1.0, recs, 5.0)
    s, _ = load_block(s, recs, shares=True, implied=0.5)
    assert (s.prefix_cache_hit_ratio, s.prefix_cache_hit_ratio_implied) == (0.3, 0.5)
    assert s.schedule_lag_s is None  # a closed loop has no schedule


def test_warmup_is_sent_before_the_schedule_which_keeps_its_gaps() -> None:
    reqs = columns(np.array([0.5, 0.7, 1.5]), np.array([4, 4, 4]), np.array([2, 2, 2]))
    warm = columns(np.full(2, np.nan), np.array([4, 4]), np.array([2, 2]))
    at = schedule_s(Level("trace", 2.0, "trace"), warm, reqs)
    assert at[:2] == [0.0, 0.5]  # warm-up at the mean gap (1 s over 2 gaps)
    assert np.diff(np.array(at[2:], dtype=float)) == pytest.approx([0.2, 0.8])
    assert at[2] == pytest.approx(1.0)  # after the warm-up, the trace's first row
    assert schedule_s(Level("concurrency", 2), warm, reqs) == [None] * 5
