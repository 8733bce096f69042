"""Prefix caching in the simulator: prompt identities from load/'s specs, block-hash reuse
and its LRU eviction, the predicted hit ratio, and per-request serving costs.

Steps cost a scripted 10 ms + 1 ms a computed prompt token + 2 ms a decoder."""

from __future__ import annotations

import numpy as np
import pytest

from inferlab.errors import InferlabError
from inferlab.load.conversations import Conversation, as_conversations
from inferlab.load.spec import columns
from inferlab.load.workload import with_blocks
from inferlab.sim.engine import simulate
from inferlab.sim.prefix_cache import block_keys, chat_run, common_prefix, own_run, prompt_runs
from inferlab.sim.request import Prompt, RequestCosts, RequestModel
from inferlab.sim.scheduler import Policy
from inferlab.sim.users import ClosedLoop
from inferlab.sim.workload import Arrival, arrivals_of
from tests.sim.test_llamacpp_slots import Scripted, ms


def test_a_traces_hash_ids_become_shared_runs() -> None:
    plain = columns(np.zeros(2), np.array([40, 40]), np.array([5, 5]))
    reqs = with_blocks(plain, [[1, 2], [1, 3]], 16)
    a, b = prompt_runs(reqs)
    # two whole blocks fit before the 8 tokens each prompt keeps of its own
    assert a == ((1, 16), (2, 16), (own_run(0), 8))
    assert b == ((1, 16), (3, 16), (own_run(1), 8))
    assert common_prefix(a, b) == 16


def test_a_chats_turns_share_the_history_and_the_reply() -> None:
    reqs = as_conversations(None, np.array([30, 10, 5]), np.array([7, 4, 2]), Conversation(3))
    runs = prompt_runs(reqs)
    assert runs == [((chat_run(0), 30),), ((chat_run(0), 47),), ((chat_run(0), 56),)]
    assert common_prefix(runs[0], runs[1]) == 30  # a turn's prompt holds the one before


def test_block_keys_name_the_whole_prefix() -> None:
    a: Prompt = ((7, 40), (own_run(0), 30))
    b: Prompt = ((7, 40), (own_run(1), 30))
    ka, kb = block_keys(a, 16, 70), block_keys(b, 16, 70)
    assert len(ka) == 4  # 70 tokens: 4 whole blocks of 16
    # blocks 0 and 1 lie in the shared run; block 2 holds 8 shared tokens and 8 own ones
    assert ka[:2] == kb[:2] and ka[2] != kb[2] and ka[3] != kb[3]


def continuous(capacity_tokens: int | None = None, chunk: int = 2048) -> Policy:
    return Policy("continuous", chunk_tokens=chunk, kv_capacity_tokens=capacity_tokens)


def test_a_shared_prefix_is_not_prefilled_again() -> None:
    rec = Scripted()
    prompts: list[Prompt] = [((7, 64), (own_run(0), 36)), ((7, 64), (own_run(1), 50))]
    arrivals = [Arrival(0.0, 100, 2, spec=0), Arrival(1.0, 114, 2, spec=1)]
    res = simulate(arrivals, rec, continuous(), requests=RequestModel(prompts=prompts))
    # the second prompt finds the 4 blocks of the shared 64 tokens cached
    assert [p for p, _ in rec.steps if p] == [((100, 0),), ((50, 64),)]
    second = res.requests[1]
    assert second.cached_tokens == 64
    assert ms(res.token_times(second)) == [1060.0, 1072.0]  # 10 + 50 ms, then 12 ms
    assert res.predicted_hit_ratio == pytest.approx(64 / 214)


def test_only_blocks_already_computed_are_reused() -> None:
    rec = Scripted()
    # chunks of 32 tokens: when the second request is admitted (at 42 ms) the first has
    # computed 32 of its tokens, two blocks of the shared prefix
    prompts: list[Prompt] = [((7, 64), (own_run(0), 36)), ((7, 64), (own_run(1), 50))]
    arrivals = [Arrival(0.0, 100, 2, spec=0), Arrival(0.010, 114, 2, spec=1)]
    res = simulate(arrivals, rec, continuous(chunk=32), requests=RequestModel(prompts=prompts))
    assert res.requests[1].cached_tokens == 32
    # its chunks start on its 32 cached tokens, after the first request's last 4
    assert [p for p, _ in rec.steps if p] == [
        ((32, 0),),
        ((32, 32),),
        ((32, 64),),
        ((4, 96), (28, 32)),
        ((32, 60),),
        ((22, 92),),
    ]


def test_free_cached_blocks_are_evicted_oldest_first_when_the_cache_is_full() -> None:
    rec = Scripted()
    # 10 blocks of 16. Request 0 (prefix 7) leaves 6 blocks cached; request 1 (prefix 8)
    # then holds 7, leaving room for 3: request 0's chain loses its 3 last blocks (a freed
    # chain goes tail first). Request 2 (prefix 7) finds the first 3: 48 tokens.
    prompts: list[Prompt] = [
        ((7, 64), (own_run(0), 36)),
        ((8, 64), (own_run(1), 36)),
        ((7, 64), (own_run(2), 50)),
    ]
    arrivals = [Arrival(0.0, 100, 2, spec=0), Arrival(1.0, 100, 2, spec=1)]
    arrivals.append(Arrival(2.0, 114, 2, spec=2))
    res = simulate(arrivals, rec, continuous(160), requests=RequestModel(prompts=prompts))
    assert [r.cached_tokens for r in res.requests] == [0, 0, 48]
    assert [p for p, _ in rec.steps if p][-1] == ((66, 48),)
    # with room for everything, it finds all 4 blocks of its prefix
    res = simulate(arrivals, Scripted(), continuous(), requests=RequestModel(prompts=prompts))
    assert [r.cached_tokens for r in res.requests] == [0, 0, 64]


def test_request_costs_delay_the_scheduler_and_the_client() -> None:
    rec = Scripted()
    costs = RequestModel(costs=RequestCosts(request_overhead_s=0.005, finish_overhead_s=0.003))
    loop = ClosedLoop(users=1, requests_per_user=2, prompt_tokens=20, output_tokens=2)
    res = simulate([], rec, continuous(), loop, requests=costs)
    first, second = res.requests
    # seen at 5 ms, prefilled by 35, decoded by 47; the client has it all at 50 ms
    assert ms(res.token_times(first)) == [35.0, 47.0]
    assert first.finish_s == pytest.approx(0.050)
    # the user's next request is sent at 50 ms, seen at 55, its first token at 85
    assert second.arrival_s == pytest.approx(0.050)
    assert ms(res.token_times(second)) == [85.0, 97.0]
    # a cost a prompt token as well (tokenisation): 20 tokens x 0.5 ms = 10 ms more
    per_token = RequestCosts(request_overhead_s=0.005, request_overhead_per_token_s=0.0005)
    res = simulate(
        [Arrival(0.0, 20, 2)], Scripted(), continuous(), None, requests=RequestModel(per_token)
    )
    assert ms(res.token_times(res.requests[0])) == [45.0, 57.0]
    with pytest.raises(InferlabError, match="request_overhead_s must be a finite time"):
        RequestCosts(request_overhead_s=-1.0)


def test_without_costs_or_prompts_nothing_moves() -> None:
    rec = Scripted()
    res = simulate([Arrival(0.0, 20, 2)], rec, continuous())
    assert ms(res.token_times(res.requests[0])) == [30.0, 42.0]
    assert res.requests[0].finish_s == pytest.approx(0.042)
    assert res.predicted_hit_ratio is None


def test_a_preempted_request_finds_what_it_computed_unless_evicted() -> None:
    rec = Scripted()
    # 10 blocks of 16; two 64-token prompts, 40 tokens out. Both decode, 5 blocks each,
    # until the first (one token ahead) needs a 6th: the second is preempted with 78
    # tokens in KV, 4 whole blocks, left cached. The first grows to 7 blocks, leaving room
    # for 3: the last of the 4 is evicted. Readmitted, the second must compute 64 + 15
    # tokens and finds 48 of them.
    prompts: list[Prompt] = [((own_run(0), 64),), ((own_run(1), 64),)]
    arrivals = [Arrival(0.0, 64, 40, spec=0), Arrival(0.001, 64, 40, spec=1)]
    policy = continuous(160)
    res = simulate(arrivals, rec, policy, requests=RequestModel(prompts=prompts))
    assert res.preemptions == 1
    assert [(r.cached_tokens, r.preemptions) for r in res.requests] == [(0, 0), (48, 1)]
    assert [p for p, _ in rec.steps if p][-1] == ((31, 48),)


def test_with_room_for_everything_the_hit_ratio_is_the_levels_implied_one() -> None:
    # prefix groups of 64 tokens (4 whole blocks), requests a second apart: every repeat of
    # a group finds its prefix, as a perfect cache would
    plain = columns(np.arange(12.0), np.full(12, 100), np.full(12, 4))
    reqs = with_blocks(plain, [[i % 3] for i in range(12)], 64)
    res = simulate(
        arrivals_of(reqs),
        Scripted(),
        continuous(),
        requests=RequestModel(prompts=prompt_runs(reqs)),
    )
    assert reqs.implied_hit_ratio == pytest.approx(9 * 64 / 1200)
    assert res.predicted_hit_ratio == pytest.approx(reqs.implied_hit_ratio)
