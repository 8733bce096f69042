"""What the probes read off the client's stamps: steady gaps, the stall, the medians."""

from __future__ import annotations

import pytest

from inferlab.profile.mixed import stall_s
from inferlab.profile.probe_plan import make_plan
from inferlab.profile.probes import steady_gaps, summarise
from inferlab.profile.run_profile import spread_rounds
from inferlab.records import RequestRecord

MS = 1_000_000


def _rec(prompt: int, events_ms: list[float]) -> RequestRecord:
    r = RequestRecord(0, "t", "measure", prompt, len(events_ms))
    r.event_ns = [round(t * MS) for t in events_ms]
    return r


def test_steady_gaps_keep_only_the_steps_every_stream_decoded_in() -> None:
    # stream a starts first (its first gap ran alone); b's first token at 30 ms; a ends at 90
    a = _rec(16, [10, 20, 30, 40, 50, 60, 70, 80, 90])
    b = _rec(16, [30, 45, 60, 75, 90, 105])
    batch, gaps, ctx = steady_gaps([a, b], 16)
    # a: 30-40 .. 80-90 (6 gaps of 10 ms); b: 30-45, 45-60, 60-75, 75-90 (4 of 15 ms)
    assert batch == 2
    assert sorted(round(g * 1e3, 6) for g in gaps) == [10.0] * 6 + [15.0] * 4
    # each gap's contexts: both streams' prompt + tokens they had at its start, summed
    # a's gaps from 30..80: (a's tokens, b's tokens) at each start: (3,1) (4,1) (5,2) (6,3)
    # (7,3) (8,4); b's from 30, 45, 60, 75: (3,1) (4,2) (6,3) (7,4); + 16 each, per stream
    want = (47 + 30 + 10 * 32) / 10 / 2
    assert ctx == pytest.approx(want)


def test_streams_that_never_overlap_enough_give_the_batch_they_reached() -> None:
    # c starts after a and b are nearly done: only a and b decoded together for 8 gaps
    a = _rec(16, [float(t) for t in range(0, 100, 10)])
    b = _rec(16, [float(t) for t in range(1, 101, 10)])
    c = _rec(16, [95.0, 105, 115])
    batch, gaps, _ = steady_gaps([a, b, c], 16)
    assert batch == 2 and len(gaps) == 16


def test_the_stall_is_the_gap_ending_at_the_prompts_first_token() -> None:
    # two decoders at 20 ms steps; the prompt's step (75 ms) ends at 135 ms, its first token
    a = _rec(16, [0, 20, 40, 60, 135, 155])
    b = _rec(16, [1, 21, 41, 61, 136, 156])
    stall, ctx = stall_s([a, b], first_ns=135 * MS)
    assert stall == pytest.approx(0.075)
    assert ctx == 2 * (16 + 4)  # each had 4 tokens before the step (prompt + j, j = 4)


def test_summary_is_the_median_with_quartiles_never_the_fastest() -> None:
    o = summarise("lone", [0.30, 0.10, 0.20, 0.40, 0.25], 0, 0, 128, 0)
    assert (o.median_s, o.p25_s, o.p75_s, o.n) == (0.25, 0.20, 0.30, 5)


def test_the_plan_fits_the_servers_slots_and_context() -> None:
    p = make_plan(1, slots=4, ctx_per_slot=1024)
    assert p.decode_batches == (1, 2, 3, 4) and p.mixed_decoders == (1, 3)
    assert p.lone_prompts == (16, 128, 384) and p.repeats == 3
    assert p.decode_rounds == 4  # one after each probe group (run_profile.py)
    assert [spread_rounds(4, g, 4) for g in range(4)] == [1, 1, 1, 1]
    assert [spread_rounds(6, g, 4) for g in range(4)] == [1, 2, 1, 2]
    small = make_plan(1, slots=1, ctx_per_slot=256)
    assert small.mixed_decoders == ()  # no free slot for the arriving prompt
    assert max(small.lone_prompts) <= 256 - 48
    wide = make_plan(2, slots=4, ctx_per_slot=1024)
    assert wide.decode_batches == (1, 2, 3, 4) and wide.repeats == 5
    assert len(wide.lone_prompts) > len(p.lone_prompts)
    assert p.split_batches == (2,)  # slots 0 and 2 (4 slots hold no 3 apart)
    many = make_plan(1, slots=16, ctx_per_slot=1024)
    assert many.split_batches == (2, 4)  # slots 0, 2, 4, 6 (a wider split: --budget 2)
    # 16 long prompts at once outlast a request's bound on this CPU: the context probe's
    # largest batch stays at 8 (the demo's 16-slot server lost its profile to it)
    assert many.context_batches == (1, 8)
    # the context probe runs once: 47 gaps a stream, not 15, so one slow stretch of the
    # machine is not its median; its prompt and reply fit a slot at every budget
    assert p.context_output == 48 and p.decode_output == 16
    for plan, ctx in ((p, 1024), (small, 256), (make_plan(3, 4, 1024), 1024)):
        assert plan.context_prompt + plan.context_output <= ctx
    # every batch up to 8 (one thread's step is not a line in D), then halfway and all
    assert many.decode_batches == (1, 2, 3, 4, 5, 6, 7, 8, 12, 16)
