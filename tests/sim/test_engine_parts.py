"""The running set's lazy bookkeeping, the KV block manager, closed-loop users, the heap,
the timeline's buffered rows and the GC pause."""

from __future__ import annotations

import gc
import itertools

import pytest

from inferlab.sim.engine import Timeline, simulate
from inferlab.sim.kv import KVBlockManager
from inferlab.sim.pause_gc import gc_paused
from inferlab.sim.policies.continuous import ContinuousScheduler
from inferlab.sim.request import SimRequest
from inferlab.sim.running import Running
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime.base import DecodeBatch
from inferlab.sim.steptime.calibrated import FittedStepTime
from inferlab.sim.users import ClosedLoop, ClosedLoopUsers
from inferlab.sim.workload import Arrival


def test_kv_blocks_round_up_and_capacity_is_whole_blocks() -> None:
    kv = KVBlockManager.for_tokens(100, 16)
    assert kv.capacity_blocks == 6  # 100 // 16
    assert [kv.blocks_for(n) for n in (1, 16, 17, 32, 33)] == [1, 1, 2, 2, 3]
    assert kv.fits(6) and not kv.fits(7)
    assert KVBlockManager.for_tokens(None, 16).fits(10**9)


def test_running_decodes_lazily_and_matches_eager_counts() -> None:
    run = Running(KVBlockManager.for_tokens(None, 4))
    a, b = SimRequest(0, 0.0, 5, 6), SimRequest(1, 0.0, 3, 3)
    for r in (a, b):
        run.admit(r)
        assert not run.end_prefill_chunk(r, r.prefill_target, 0.1)  # one token each from prefill
    assert run.decoding == 2 and run.context_sum == (5 + 1) + (3 + 1)
    finished = []
    for step in range(5):
        done = run.end_decode_step(0.2 + step / 10)
        for r in done:
            run.remove(r)
            finished.append((step, r.id))
        ctxs = [r.prompt_tokens + run.generated(r) for r in run.requests.values()]
        assert run.context_sum == sum(ctxs) and run.decode_contexts() == ctxs
        assert run.kv.used_blocks == sum(run.kv.blocks_for(c) for c in ctxs)
    assert finished == [(1, 1), (4, 0)]  # b: 1 + 2 decode tokens; a: 1 + 5
    assert run.kv.used_blocks == 0 and run.context_sum == 0 and len(run) == 0
    assert a.pieces == [(1, 0, 1), (0, 0, 5)]  # its prefill token, then five decode steps


def test_closed_loop_users_send_until_done() -> None:
    users = ClosedLoopUsers(ClosedLoop(3, 2, 10, 5, stagger_s=1.5), itertools.count())
    first = users.first_requests()
    assert [(r.user, r.arrival_s) for r in first] == [(0, 0.0), (1, 0.5), (2, 1.0)]
    nxt = users.follow_up(first[1], 7.0)
    assert nxt is not None and (nxt.user, nxt.arrival_s, nxt.id) == (1, 7.0, 3)
    assert users.follow_up(nxt, 9.0) is None  # user 1 has sent its two


def test_ties_on_the_heap_go_to_the_earlier_event() -> None:
    # A 10 ms step ends at t = 0.01 exactly when the second request arrives: the arrival,
    # pushed first, is handled first, so it joins the step that starts at 0.01.
    model = FittedStepTime(0.01, 0.0, 0.0)
    arr = [Arrival(0.0, 1, 3), Arrival(0.01, 1, 3)]
    res = simulate(arr, model, Policy("continuous", chunk_tokens=64))
    by_id = {r.id: r for r in res.requests}
    assert res.token_times(by_id[1])[0] == pytest.approx(0.02)
    assert res.timeline.batch[1] == 2


def test_decode_batch_of_a_list() -> None:
    d = DecodeBatch.of([3, 4, 5])
    assert (d.count, d.context_sum, d.contexts()) == (3, 12, [3, 4, 5])


def test_timeline_keeps_every_step_of_a_long_decode_run() -> None:
    # One request decoding 50,000 steps, all in the engine's decode-only loop: a row each,
    # in every column, at the exact step starts.
    out = 50_005
    res = simulate([Arrival(0.0, 1, out)], FittedStepTime(0.5, 0.0, 0.0), Policy("continuous"))
    assert res.steps == out  # the prefill yields the first token, one decode step each after
    t = res.timeline.column(0)
    assert [len(res.timeline.column(i)) for i in range(len(Timeline.COLUMNS))] == [out] * 4
    assert list(t) == [0.5 * i for i in range(res.steps)]  # exact: halves add exactly
    assert res.timeline.batch == [1] * res.steps
    assert res.timeline.queue == [0] * res.steps


def test_gc_pause_moves_what_the_caller_keeps_to_the_oldest_generation() -> None:
    with gc_paused(long_lived=True):
        kept = [[1, 2], [3]]
    assert gc.isenabled()
    assert any(o is kept for o in gc.get_objects(generation=2))
    assert not any(o is kept for o in gc.get_objects(generation=0))
    assert gc.get_freeze_count() == 0  # nothing left frozen


def test_gc_pause_leaves_objects_someone_else_froze() -> None:
    frozen = [[0]]
    gc.freeze()
    try:
        n = gc.get_freeze_count()
        with gc_paused(long_lived=True):
            kept = [[1]]
        assert gc.get_freeze_count() == n  # not unfrozen by the pause
        assert not any(o is frozen for o in gc.get_objects(generation=2))
        assert kept
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("max_time_s", [float("inf"), 7.25])
def test_the_decode_only_loop_gives_the_general_paths_numbers(
    monkeypatch: pytest.MonkeyPatch, max_time_s: float
) -> None:
    arrivals = [Arrival(0.05 * i, 40 + 7 * (i % 5), 30 + 11 * (i % 7)) for i in range(120)]
    users = ClosedLoop(4, requests_per_user=6, prompt_tokens=64, output_tokens=90)
    policy = Policy("continuous", chunk_tokens=64, kv_capacity_tokens=1600, block_tokens=16)
    model = FittedStepTime(0.004, 0.0003, 0.00002)

    def run() -> tuple[object, ...]:
        res = simulate(arrivals, model, policy, users=users, max_time_s=max_time_s)
        tl = res.timeline
        times = [res.token_times(r) for r in res.requests]
        columns = [list(tl.column(i)) for i in range(len(Timeline.COLUMNS))]
        return res.steps, res.preemptions, res.sim_time_s, times, columns

    fast = run()
    monkeypatch.setattr(ContinuousScheduler, "repeats_decode_only", property(lambda s: False))
    general = run()
    assert fast[1] > 0  # it preempted
    assert fast == general
