"""Each scheduling policy alone: what it admits and what batch it picks, without the engine."""

from __future__ import annotations

from collections import deque

import pytest

from inferlab.errors import InferlabError
from inferlab.sim.kv import KVBlockManager
from inferlab.sim.policies import POLICIES, make_scheduler
from inferlab.sim.policies.continuous import ContinuousScheduler
from inferlab.sim.policies.sequential import SequentialScheduler
from inferlab.sim.policies.static import StaticScheduler
from inferlab.sim.request import SimRequest
from inferlab.sim.running import Running
from inferlab.sim.scheduler import Policy


def queue(*prompts: int, output: int = 10) -> deque[SimRequest]:
    return deque(SimRequest(i, 0.0, p, output) for i, p in enumerate(prompts))


def running(capacity_tokens: int | None = None, block: int = 16) -> Running:
    return Running(KVBlockManager.for_tokens(capacity_tokens, block))


def prefill_all(run: Running, t: float = 1.0) -> None:
    for r in list(run.prefilling.values()):
        run.end_prefill_chunk(r, r.prefill_target - r.prefilled, t)


def test_every_registered_policy_makes_its_own_scheduler() -> None:
    for name, cls in POLICIES.items():
        s = make_scheduler(Policy(name))
        assert type(s) is cls
    assert isinstance(make_scheduler(Policy("static")), StaticScheduler)
    with pytest.raises(InferlabError, match="unknown policy 'fifo'") as e:
        make_scheduler(Policy("fifo"))
    assert all(name in str(e.value) for name in POLICIES)  # the error lists every choice


def test_sequential_runs_one_request_at_a_time() -> None:
    s, run, waiting = SequentialScheduler(Policy("sequential")), running(), queue(100, 50, 70)
    batch = s.next_batch(waiting, run)
    assert batch is not None and [(r.id, n) for r, n in batch.chunks] == [(0, 100)]
    assert not batch.decodes and len(waiting) == 2
    prefill_all(run)
    batch = s.next_batch(waiting, run)  # request 0 decodes; nobody joins it
    assert batch is not None and not batch.chunks and batch.decodes
    assert len(run) == 1 and len(waiting) == 2


def test_static_batch_admits_nobody_until_it_is_empty() -> None:
    s, run, waiting = StaticScheduler(Policy("static", max_batch=2)), running(), queue(10, 20, 30)
    batch = s.next_batch(waiting, run)
    assert batch is not None and [r.id for r, _ in batch.chunks] == [0, 1]  # up to max_batch
    prefill_all(run)
    s.next_batch(waiting, run)
    assert [r.id for r in waiting] == [2]  # the batch has room (capacity 2) but is not empty
    for r in list(run.requests.values()):
        run.remove(r)
    batch = s.next_batch(waiting, run)
    assert batch is not None and [r.id for r, _ in batch.chunks] == [2]


def test_continuous_unchunked_prefill_runs_alone_then_everyone_decodes() -> None:
    s, run, waiting = ContinuousScheduler(Policy("continuous")), running(), queue(10)
    s.next_batch(waiting, run)
    prefill_all(run)
    waiting.append(SimRequest(9, 0.5, 8000, 10))
    batch = s.next_batch(waiting, run)  # joins at once, and its prompt stalls the decoder
    assert batch is not None and [(r.id, n) for r, n in batch.chunks] == [(9, 8000)]
    assert not batch.decodes and batch.size(run) == 1


def test_continuous_chunked_prefill_shares_the_budget_in_admission_order() -> None:
    s = ContinuousScheduler(Policy("continuous", chunk_tokens=512))
    run, waiting = running(), queue(300, 400, 100)
    batch = s.next_batch(waiting, run)
    assert batch is not None and batch.decodes
    assert [(r.id, n) for r, n in batch.chunks] == [(0, 300), (1, 212)]  # request 2 waits
    for r, n in batch.chunks:
        run.end_prefill_chunk(r, n, 1.0)
    batch = s.next_batch(waiting, run)
    assert batch is not None and [(r.id, n) for r, n in batch.chunks] == [(1, 188), (2, 100)]
    assert batch.size(run) == 3  # request 0 decodes beside the two chunks


def test_kv_full_holds_the_queue_and_preempts_the_latest() -> None:
    # 8 blocks of 16 tokens; each request needs 3 blocks for its prompt + first token.
    s = ContinuousScheduler(Policy("continuous"))
    run, waiting = running(capacity_tokens=128), queue(40, 40, 40, output=100)
    s.next_batch(waiting, run)
    prefill_all(run)
    assert run.kv.used_blocks == 9 > 8  # admitted before any of them held blocks
    batch = s.next_batch(waiting, run)
    assert batch is not None and s.preemptions == 1
    assert [r.id for r in waiting] == [2] and waiting[0].preemptions == 1
    assert run.kv.used_blocks == 6


def test_a_request_larger_than_the_cache_is_refused() -> None:
    s = ContinuousScheduler(Policy("continuous"))
    with pytest.raises(InferlabError, match="cannot hold even one request of 1010 tokens"):
        s.next_batch(queue(1000), running(capacity_tokens=512))
