"""llama-server's update_slots, completed: the task queue, the slot prompt cache, slot choice.

Every step costs a scripted 10 ms + 1 ms a computed prompt token + 2 ms a decoder, so
each expected time below is worked out by hand."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from inferlab.load.conversations import Conversation, as_conversations
from inferlab.sim.engine import Engine, simulate
from inferlab.sim.policies.llamacpp import LlamaCppKnobs, LlamaCppScheduler
from inferlab.sim.policies.llamacpp_slots import PromptRam
from inferlab.sim.policies.vllm_knobs import VllmKnobs
from inferlab.sim.prefix_cache import chat_run, own_run, prompt_runs
from inferlab.sim.request import Prompt, RequestCosts, RequestModel, SimRequest
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime.base import DecodeBatch
from inferlab.sim.users import Chats
from inferlab.sim.workload import Arrival

MS = 1e-3


class Scripted:
    """10 ms a step, 1 ms a prompt token computed, 2 ms a decoder; keeps each step's
    ((chunk tokens, cached before it) per prompt, decoders)."""

    def __init__(self) -> None:
        self.steps: list[tuple[tuple[tuple[int, int], ...], int]] = []

    extra_ubatch_s = 0.0

    def split_decode_s(self, groups: tuple[int, ...]) -> float:
        return 0.0

    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        self.steps.append((tuple(prefill), decode.count))
        return 10 * MS + MS * sum(n for n, _ in prefill) + 2 * MS * decode.count


def ms(times: Sequence[float]) -> list[float]:
    return [round(t / MS, 6) for t in times]


def test_a_prompt_arriving_mid_step_joins_the_next_step() -> None:
    rec = Scripted()
    # A's 100-token prompt runs 0 to 110 ms; B arrives at 50 ms, in the middle of it
    arrivals = [Arrival(0.0, 100, 3), Arrival(0.050, 20, 2)]
    res = simulate(arrivals, rec, LlamaCppKnobs(parallel=2).policy())
    # step 2 (110-142 ms): A's decode + B's 20 tokens; step 3 (142-156): both decode
    assert rec.steps == [(((100, 0),), 0), (((20, 0),), 1), ((), 2)]
    a, b = res.requests[0], res.requests[1]
    assert ms(res.token_times(a)) == [110.0, 142.0, 156.0]
    assert ms(res.token_times(b)) == [142.0, 156.0]  # TTFT 92 ms: 60 of them waiting


def test_prompts_arriving_together_share_a_step_in_slot_order() -> None:
    rec = Scripted()
    arrivals = [Arrival(0.0, 30, 2), Arrival(0.0, 20, 2)]
    simulate(arrivals, rec, LlamaCppKnobs(parallel=2).policy())
    # the server drains its queue before the step; the first task takes the last idle slot
    # of equal age (slot 1), the second slot 0, and prompts are batched in slot order
    assert rec.steps[0] == (((20, 0), (30, 0)), 0)
    # the continuous policy starts a step on the first arrival (unchanged)
    rec = Scripted()
    simulate(arrivals, rec, Policy("continuous", chunk_tokens=2048))
    assert rec.steps[0] == (((30, 0),), 0)


def test_a_burst_is_seen_together_though_its_prompts_cost_apart() -> None:
    # a cost a prompt token (tokenisation) would see the 10-token prompt 0.4 ms before the
    # 50-token one, and a step of its own would start; sent at one instant, they are seen
    # together, when the longest is, and share the first step
    costs = RequestModel(RequestCosts(request_overhead_s=0.002, request_overhead_per_token_s=1e-5))
    burst = [Arrival(0.0, 50, 2), Arrival(0.0, 10, 2), Arrival(0.0005, 30, 2)]
    rec = Scripted()
    simulate(burst, rec, LlamaCppKnobs(parallel=4).policy(), requests=costs)
    assert sorted(rec.steps[0][0]) == [(10, 0), (50, 0)]  # not the one sent 0.5 ms later
    assert rec.steps[1][0] == ((30, 0),)
    # a server that starts a step on its first arrival still does, and so does vLLM,
    # whose engine the first request of a burst wakes alone (sim/policies/vllm.py)
    for policy in (Policy("continuous", chunk_tokens=2048), VllmKnobs().policy()):
        rec = Scripted()
        simulate(burst, rec, policy, requests=costs)
        assert rec.steps[0][0] == ((10, 0),)


def chat(message: list[int], output: list[int], think_s: float = 0.0) -> tuple[Chats, list[Prompt]]:
    reqs = as_conversations(
        None, np.array(message), np.array(output), Conversation(len(message), think_s)
    )
    chats = Chats(
        prompts=reqs.prompt_tokens.tolist(),
        outputs=reqs.output_tokens.tolist(),
        conversation=reqs.conversation_id.tolist(),
        think_time_s=think_s,
        users=1,
    )
    return chats, prompt_runs(reqs)


def test_a_chats_second_turn_prefills_only_its_new_tokens() -> None:
    rec = Scripted()
    chats, prompts = chat([50, 20], [10, 2])  # turn 2's prompt: 50 + 10 + 20 = 80 tokens
    res = simulate(
        [], rec, LlamaCppKnobs(parallel=2).policy(), chats, requests=RequestModel(prompts=prompts)
    )
    # the slot keeps turn 1's prompt and 9 of its 10 reply tokens (the last never entered
    # the KV): turn 2 computes 80 - 59 = 21 tokens on top of 59 cached
    prefills = [p for p, _ in rec.steps if p]
    assert prefills == [((50, 0),), ((21, 59),)]
    t1, t2 = res.requests
    assert (t1.cached_tokens, t2.cached_tokens) == (0, 59)
    # turn 1: 60 ms prefill + 9 decode steps of 12 ms = 168 ms; turn 2 sent then, its
    # first token after 10 + 21 ms
    assert ms(res.token_times(t2)) == [199.0, 211.0]
    assert res.predicted_hit_ratio == pytest.approx(59 / 130)


def test_without_prompt_identities_nothing_is_cached() -> None:
    rec = Scripted()
    chats, _ = chat([50, 20], [10, 2])
    res = simulate([], rec, LlamaCppKnobs(parallel=2).policy(), chats)
    assert [p for p, _ in rec.steps if p] == [((50, 0),), ((80, 0),)]
    assert res.predicted_hit_ratio is None


def test_a_task_goes_to_the_slot_with_the_most_similar_prompt() -> None:
    # three slots; conversation A's turn 1 at 0 s, B's at 1 s, A's turn 2 at 2 s. By age,
    # A's turn 2 would take the never-used slot 0; by similarity it takes A's slot (2).
    prompts: list[Prompt] = [
        ((chat_run(0), 40),),  # A, turn 1: 40 tokens, 4 out
        ((chat_run(1), 40),),  # B, turn 1
        ((chat_run(0), 60),),  # A, turn 2: A's 40 + 4 reply + 16 new
    ]
    sched = run_slots(3, [(0.0, 40), (1.0, 40), (2.0, 60)], prompts)
    assert sched.slots[0].request is None and sched.slots[0].prompt is None  # never used
    assert sched.slots[1].prompt == ((chat_run(1), 43),)  # B's turn and 3 of its reply
    a2 = sched.slots[2].request
    assert a2 is not None and a2.id == 2 and a2.cached_tokens == 43


def run_slots(
    parallel: int, arrivals: list[tuple[float, int]], prompts: list[Prompt]
) -> LlamaCppScheduler:
    """Requests (arrival, prompt tokens; 4 out) one per prompt, run; the scheduler after."""
    engine = Engine(
        Scripted(),
        LlamaCppKnobs(parallel=parallel).policy(),
        requests=RequestModel(prompts=prompts),
    )
    engine.push_all(SimRequest(i, t, n, 4, spec=i) for i, (t, n) in enumerate(arrivals))
    engine.run(float("inf"))
    assert isinstance(engine.scheduler, LlamaCppScheduler)
    return engine.scheduler


def test_below_the_similarity_threshold_the_least_recently_used_slot_is_taken() -> None:
    # the second prompt shares 5 of its 100 tokens (5 % <= 10 %) with slot 1's: it takes
    # slot 0, never used, and the host cache has nothing for it
    prompts: list[Prompt] = [((7, 5), (own_run(0), 35)), ((7, 5), (own_run(1), 95))]
    second = run_slots(2, [(0.0, 40), (1.0, 100)], prompts).slots[0].request
    assert second is not None and second.id == 1 and second.cached_tokens == 0
    # sharing 20 of 100 (20 % > 10 %), it takes slot 1 and keeps those 20
    prompts = [((7, 20), (own_run(0), 20)), ((7, 20), (own_run(1), 80))]
    second = run_slots(2, [(0.0, 40), (1.0, 100)], prompts).slots[1].request
    assert second is not None and second.id == 1 and second.cached_tokens == 20


def test_the_host_prompt_cache_hands_back_a_saved_prompt() -> None:
    ram = PromptRam()
    a: Prompt = ((chat_run(0), 100),)
    ram.save(a)
    ram.save(((chat_run(0), 60),))  # contained in a: not stored again
    assert ram.states == [a]
    # an empty slot takes the saved prompt that keeps the most of itself and the new one
    assert ram.load(None, ((chat_run(0), 130),)) == a
    assert ram.states == []
    ram.save(a)
    assert ram.load(None, ((chat_run(0), 10),)) is None  # keeps 10 % of a (< 25 %)
    # over its limit, the oldest prompts leave first
    small = PromptRam(limit_tokens=250)
    for i in range(3):
        small.save(((chat_run(i), 100),))
    assert small.states == [((chat_run(1), 100),), ((chat_run(2), 100),)]
    assert small.tokens == 200


def test_prompt_chunks_count_their_cached_tokens_across_n_batch() -> None:
    rec = Scripted()
    chats, prompts = chat([50, 150], [10, 2])  # turn 2: 59 cached, 151 to compute
    simulate(
        [],
        rec,
        LlamaCppKnobs(parallel=2, n_batch=64).policy(),
        chats,
        requests=RequestModel(prompts=prompts),
    )
    prefills = [p for p, _ in rec.steps if p]
    # n_batch 64, the turn alone in its steps: 151 tokens in 64 + 64 + 23, each chunk on
    # top of the cached tokens and the chunks before it
    assert prefills == [((50, 0),), ((64, 59),), ((64, 123),), ((23, 187),)]


def test_an_idle_slots_prompt_survives_in_the_host_cache() -> None:
    # P (prefix 5 + its own text) ends in slot 1; U, unrelated, takes slot 0, and P's slot,
    # idle, is saved to the host cache. Q shares P's prefix: it takes slot 1 by similarity
    # (keeping 40 of 53 tokens: no save), overwriting P's text. P's long continuation
    # (40 / 440 <= 10 % alike with Q) takes slot 0 by age and loads P back: 50 + 3 cached.
    prompts: list[Prompt] = [
        ((5, 40), (own_run(0), 10)),
        ((9, 40), (own_run(1), 10)),
        ((5, 40), (own_run(2), 10)),
        ((5, 40), (own_run(0), 400)),
    ]
    sched = run_slots(2, [(0.0, 50), (1.0, 50), (2.0, 50), (3.0, 440)], prompts)
    last = sched.slots[0].request
    assert last is not None and last.id == 3 and last.cached_tokens == 53


def test_a_chat_template_adds_its_tokens_to_every_turn_and_the_cache_keeps_them() -> None:
    from inferlab.load.conversations import with_template

    reqs = as_conversations(None, np.array([50, 20, 30]), np.array([10, 2, 2]), Conversation(3))
    templated = with_template(reqs, 30, 5)  # 30 on the first message, 5 per earlier one
    # turn k holds 2k earlier messages: +30, +30 + 2 x 5, +30 + 4 x 5
    assert templated.prompt_tokens.tolist() == [
        80,
        80 + 10 + 20 + 10,
        80 + 10 + 20 + 10 + 2 + 30 + 10,
    ]
    assert with_template(reqs, 0, 0) is reqs
    rec = Scripted()
    chats = Chats(
        templated.prompt_tokens.tolist()[:2], [10, 2], templated.conversation_id.tolist()[:2],
        users=1,
    )  # fmt: skip
    policy = LlamaCppKnobs(parallel=2).policy()
    simulate([], rec, policy, chats, requests=RequestModel(prompts=prompt_runs(templated)[:2]))
    # turn 2 (120 tokens) reuses turn 1's 80 and 9 of its 10 reply tokens: 31 computed
    assert [p for p, _ in rec.steps if p] == [((80, 0),), ((31, 89),)]


def test_every_chat_opens_with_the_templates_shared_head_and_a_new_one_follows_it() -> None:
    from inferlab.load.conversations import with_template
    from inferlab.sim.prefix_cache import TEMPLATE_RUN, chat_prompt

    reqs = as_conversations(None, np.array([50, 20, 40]), np.array([4, 4, 4]), Conversation(1))
    templated = with_template(reqs, 30, 5, shared_tokens=24)  # 24 of the 30 alike in all
    runs = prompt_runs(templated)
    assert runs[0] == ((TEMPLATE_RUN, 24), (chat_run(0), 56))
    assert runs[1] == ((TEMPLATE_RUN, 24), (chat_run(1), 26))
    assert chat_prompt(5, 20, 24) == ((chat_run(5), 20),)  # no head longer than the prompt
    # three slots: A (slot 2) finishes; B, sent later, would take slot 1 by age, but its
    # 24 shared tokens in A's slot are 24 / 50 > 10 % alike: it takes slot 2 and reuses
    # them (as llama-server: a new chat lands where a chat was, LCP similarity)
    sched = run_slots(3, [(0.0, 80), (1.0, 50)], runs[:2])
    b = sched.slots[2].request
    assert b is not None and b.id == 1 and b.cached_tokens == 24
    assert sched.slots[1].request is None and sched.slots[1].prompt is None
