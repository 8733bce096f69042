"""vLLM's V1 scheduler in the simulator (sim/policies/vllm.py), on hand-built workloads:
the token budget and chunked prefill, max_num_seqs, the prefix cache by block hash and its
LRU eviction, preemption of the last running request and what its recompute costs.

Steps cost a scripted 10 ms + 1 ms a computed prompt token + 2 ms a decoder (Scripted)."""

from __future__ import annotations

import pytest

from inferlab.errors import ConfigError
from inferlab.sim.engine import Engine, SimResult, simulate
from inferlab.sim.policies import KNOBS, POLICIES
from inferlab.sim.policies.vllm import VllmScheduler
from inferlab.sim.policies.vllm_knobs import VLLM_KNOBS, VllmKnobs
from inferlab.sim.prefix_cache import own_run
from inferlab.sim.request import Prompt, RequestModel, SimRequest
from inferlab.sim.users import ClosedLoop
from inferlab.sim.workload import Arrival
from tests.sim.test_llamacpp_slots import Scripted

SMALL = VllmKnobs(block_size=16)  # vLLM's CPU defaults, with GPU-sized blocks


def prompts_of(*runs: Prompt) -> RequestModel:
    return RequestModel(prompts=list(runs))


def prefills(rec: Scripted) -> list[tuple[tuple[int, int], ...]]:
    """Each step's prompt chunks (tokens, cached before them), steps with none left out."""
    return [p for p, _ in rec.steps if p]


def two_prompts(rec: Scripted, a: Prompt, b: Prompt, second_at_s: float = 1.0) -> SimResult:
    """Prompt `a` at 0 s and `b` at `second_at_s`, 2 output tokens each, as long as their
    runs (shared block key, tokens) add up to, on the small-block vLLM policy."""
    arrivals = [
        Arrival(0.0, sum(n for _, n in a), 2, spec=0),
        Arrival(second_at_s, sum(n for _, n in b), 2, spec=1),
    ]
    return simulate(arrivals, rec, SMALL.policy(), requests=prompts_of(a, b))


def test_registered_with_its_knobs_named_as_vllm_names_them() -> None:
    assert POLICIES["vllm"] is VllmScheduler
    assert KNOBS["vllm"] is VLLM_KNOBS
    assert [k.flag for k in VLLM_KNOBS] == [
        "--max-num-batched-tokens",
        "--max-num-seqs",
        "--block-size",
        "--num-gpu-blocks",
        "--long-prefill-token-threshold",
        "--enable-chunked-prefill",
        "--enable-prefix-caching",
    ]
    for k in VLLM_KNOBS:  # vLLM's own name, where a server states it, and the default
        assert k.vllm.startswith(k.flag.removesuffix("-blocks")) and k.read_from
        assert k.default == getattr(VllmKnobs(), k.attr)
    cache_info = {k.attr for k in VLLM_KNOBS if "cache_config_info" in k.read_from}
    assert cache_info == {"block_size", "num_gpu_blocks", "enable_prefix_caching"}


def test_the_knobs_become_a_policy_and_back() -> None:
    # the captured CPU server: 364 blocks of 128 tokens, one of them vLLM's null block
    p = VllmKnobs(num_gpu_blocks=364).policy()
    assert (p.name, p.max_batch, p.chunk_tokens, p.block_tokens) == ("vllm", 128, 2048, 128)
    assert p.kv_capacity_tokens == 363 * 128
    assert VllmKnobs.of(p) == VllmKnobs(num_gpu_blocks=364)
    off = VllmKnobs(enable_prefix_caching=False, long_prefill_token_threshold=256)
    assert VllmKnobs.of(off.policy()) == off
    # the blocks from a KV capacity in tokens, else unlimited
    assert VllmKnobs().policy(46_600).kv_capacity_tokens == 363 * 128
    assert VllmKnobs().policy().kv_capacity_tokens is None
    assert VllmKnobs.given((("max_num_seqs", 4), ("enable_chunked_prefill", 0))) == VllmKnobs(
        max_num_seqs=4, enable_chunked_prefill=False
    )


def test_knobs_vllm_itself_refuses_are_refused() -> None:
    with pytest.raises(ConfigError, match="max_num_batched_tokens.*must be >= max_num_seqs"):
        VllmKnobs(max_num_batched_tokens=64, max_num_seqs=128)
    with pytest.raises(ConfigError, match="num_gpu_blocks must be >= 2"):
        VllmKnobs(num_gpu_blocks=1)
    with pytest.raises(ConfigError, match="long_prefill_token_threshold must be >= 0"):
        VllmKnobs(long_prefill_token_threshold=-1)


def test_a_long_prompt_is_chunked_within_the_budget_beside_the_decoders() -> None:
    rec = Scripted()
    # a decoder running; a 5000-token prompt and a 10-token one arrive while it decodes
    arrivals = [Arrival(0.0, 100, 20), Arrival(0.05, 5000, 3), Arrival(0.06, 10, 3)]
    simulate(arrivals, rec, SMALL.policy())
    # budget 2048 a step: the decoder's token first, the long prompt takes the rest in 3
    # steps (2047, 2047, 906); the short one waits for budget, then joins the third step
    assert rec.steps[1:4] == [
        (((2047, 0),), 1),
        (((2047, 2047),), 1),
        (((906, 4094), (10, 0)), 1),
    ]
    # with chunked prefill off, the long prompt waits for a step with room for all of it
    rec = Scripted()
    whole = VllmKnobs(block_size=16, max_num_batched_tokens=8192, enable_chunked_prefill=False)
    simulate(arrivals, rec, whole.policy())
    assert prefills(rec)[1] == ((5000, 0), (10, 0))
    with pytest.raises(ConfigError, match="does not fit one step of 2048 tokens"):
        simulate(arrivals, Scripted(), VllmKnobs(enable_chunked_prefill=False).policy())


def test_long_prefill_token_threshold_caps_a_prompt_only_beside_others() -> None:
    rec = Scripted()
    knobs = VllmKnobs(block_size=16, long_prefill_token_threshold=1000)
    simulate([Arrival(0.0, 2500, 2)], rec, knobs.policy())
    assert prefills(rec) == [((2048, 0),), ((452, 2048),)]  # alone: the whole budget
    rec = Scripted()
    simulate([Arrival(0.0, 2500, 2), Arrival(0.0, 300, 2)], rec, knobs.policy())
    assert prefills(rec)[:2] == [((1000, 0), (300, 0)), ((1000, 1000),)]


def test_max_num_seqs_caps_the_running_requests() -> None:
    rec = Scripted()
    simulate([Arrival(0.0, 10, 3)] * 3, rec, VllmKnobs(max_num_seqs=2).policy())
    assert rec.steps[0] == (((10, 0), (10, 0)), 0)
    assert max(d for _, d in rec.steps) == 2


def test_two_requests_sharing_a_64_token_prefix_the_second_hits_4_blocks() -> None:
    rec = Scripted()
    shared: Prompt = ((7, 64), (own_run(0), 36))
    res = two_prompts(rec, shared, ((7, 64), (own_run(1), 50)))
    assert prefills(rec) == [((100, 0),), ((50, 64),)]
    assert [r.cached_tokens for r in res.requests] == [0, 64]
    assert res.predicted_hit_ratio == pytest.approx(64 / 214)


def test_a_partial_block_never_hits_nor_the_prompts_last_token() -> None:
    # 72 shared tokens: the 5th block holds 8 of them and 8 of each one's own -> 4 blocks
    rec = Scripted()
    res = two_prompts(rec, ((7, 72), (own_run(0), 28)), ((7, 72), (own_run(1), 28)))
    assert [r.cached_tokens for r in res.requests] == [0, 64]
    # the same 64-token prompt twice: its last token is computed again, so the last of
    # its 4 blocks is (kv_cache_manager.py: at most num_tokens - 1 cached)
    res = two_prompts(Scripted(), ((7, 64),), ((7, 64),))
    assert [r.cached_tokens for r in res.requests] == [0, 48]


def test_blocks_are_cached_when_scheduled_so_a_prompt_in_the_same_step_hits_them() -> None:
    rec = Scripted()
    res = two_prompts(rec, ((7, 64), (own_run(0), 36)), ((7, 64), (own_run(1), 50)), 0.0)
    assert prefills(rec) == [((100, 0), (50, 64))]
    assert [r.cached_tokens for r in res.requests] == [0, 64]


def test_a_block_two_requests_share_is_in_memory_once() -> None:
    shared = prompts_of(((7, 64), (own_run(0), 36)), ((7, 64), (own_run(1), 36)))
    e = Engine(Scripted(), SMALL.policy(), requests=shared)
    e.push_all(SimRequest(i, 0.0, 100, 3, spec=i) for i in range(2))
    e.run(float("inf"))
    # after their prefill each holds blocks_for(101) = 7 blocks, 4 of them the shared ones
    assert list(e.timeline.kv_blocks_used)[1] == 7 + 7 - 4


def lru_run(last: Prompt) -> list[int]:
    """16 blocks of 16 tokens. Request 0 (prefix 7) and then 1 (prefix 8) leave 6 blocks
    cached each; request 2 (120 tokens of its own) needs 8 blocks: the 4 free ones that
    hold nothing, then the 4 least recently freed cached ones, request 0's, its chain's
    tail first. Then `last` arrives. Its cached tokens, by request."""
    knobs = VllmKnobs(block_size=16, num_gpu_blocks=17)
    own: Prompt = ((own_run(2), 120),)
    lengths = enumerate((100, 100, 120, 100))
    arrivals = [Arrival(float(t), p, 1 if t == 2 else 2, spec=t) for t, p in lengths]
    requests = prompts_of(((7, 64), (own_run(0), 36)), ((8, 64), (own_run(1), 36)), own, last)
    res = simulate(arrivals, Scripted(), knobs.policy(), requests=requests)
    return [r.cached_tokens for r in res.requests]


def test_free_cached_blocks_are_evicted_least_recently_freed_first_tail_first() -> None:
    # request 0 keeps its first 2 blocks: a prompt of prefix 7 finds 32 tokens
    assert lru_run(((7, 64), (own_run(3), 36))) == [0, 0, 0, 32]
    # request 1, freed later, lost nothing: a prompt of prefix 8 finds all 64
    assert lru_run(((8, 64), (own_run(3), 36))) == [0, 0, 0, 64]


def preempting(prompts: RequestModel | None = None) -> Engine:
    """Three 32-token prompts, 40 tokens out each, admitted together (in id order) into 12
    blocks of 16. They decode in step: at 65 tokens each needs a 5th block (15 > 12)."""
    knobs = VllmKnobs(block_size=16, num_gpu_blocks=13)
    e = Engine(Scripted(), knobs.policy(), requests=prompts or RequestModel())
    e.push_all(SimRequest(i, 0.0, 32, 40, spec=i) for i in range(3))
    e.run(float("inf"))
    return e


def test_the_last_admitted_request_is_preempted_and_recomputes_its_tokens() -> None:
    e = preempting()
    assert isinstance(e.scheduler, VllmScheduler)
    assert e.scheduler.preemptions == 1
    # request 2 was admitted last: it is preempted with 32 + 33 tokens, and waits (at the
    # front of the queue) until blocks for all of them are free: the others finish first
    assert [(r.id, r.preemptions) for r in e.done] == [(0, 0), (1, 0), (2, 1)]
    assert e.scheduler.recomputed_tokens == 65
    used = list(e.timeline.kv_blocks_used)
    assert max(used) == 12 and used[used.index(12) + 16] == 10  # 3 x 4, then 2 x 5 blocks


def test_a_preempted_request_recomputes_only_what_the_cache_lost() -> None:
    own = RequestModel(prompts=[((own_run(i), 32),) for i in range(3)])
    e = preempting(own)
    assert isinstance(e.scheduler, VllmScheduler)
    # request 2 left 63 tokens in KV: 3 whole blocks cached. The two others grow to 5
    # blocks each, leaving room for 2: its tail block is evicted, and readmitted it
    # computes 65 - 32 tokens
    assert e.scheduler.recomputed_tokens == 33
    # the server counts a request's cache hits at its first scheduling only: so does this
    assert [r.cached_tokens for r in e.done] == [0, 0, 0]


def test_prefix_caching_off_caches_nothing() -> None:
    knobs = VllmKnobs(block_size=16, enable_prefix_caching=False)
    res = simulate(
        [Arrival(0.0, 100, 2, spec=0), Arrival(1.0, 114, 2, spec=1)],
        Scripted(),
        knobs.policy(),
        requests=prompts_of(((7, 64), (own_run(0), 36)), ((7, 64), (own_run(1), 50))),
    )
    assert [r.cached_tokens for r in res.requests] == [0, 0]
    assert res.predicted_hit_ratio == 0.0


def test_a_request_the_cache_can_never_hold_is_refused() -> None:
    knobs = VllmKnobs(block_size=16, num_gpu_blocks=5)  # 4 usable blocks: 64 tokens
    with pytest.raises(ConfigError, match="cannot hold one request of 60 \\+ 10 tokens"):
        simulate([Arrival(0.0, 60, 10)], Scripted(), knobs.policy())
    simulate([Arrival(0.0, 60, 5)], Scripted(), knobs.policy())  # 64 tokens in KV: fits


# A KV-starved CPU server (16 blocks of 128, 15 usable: three requests of 64 + 400 tokens at
# full length), closed loops of 16 requests. vLLM 0.32's own Scheduler, driven in-process
# through the same loops (benchmarks/vllm_preemption.py --vllm-python), counted these
# preemptions and engine steps: with the first burst all in the first step, and with the
# first request alone (the rest a step later, as an idle engine core takes them: the
# served CPU build counted 0, 1, 14-16 and 20 preemptions, in 3207-3208, 1682, 1289-1291
# and 1260 steps).
STARVED = {  # concurrency: ((preemptions, steps) together, (preemptions, steps) first alone)
    2: ((0, 3200), (0, 3208)),
    4: ((1, 1682), (1, 1682)),
    8: ((13, 1292), (14, 1291)),
    16: ((17, 1258), (20, 1260)),
}


@pytest.mark.parametrize("concurrency", sorted(STARVED))
def test_a_kv_starved_closed_loop_preempts_as_vllms_own_scheduler(concurrency: int) -> None:
    knobs = VllmKnobs(num_gpu_blocks=16)
    own = prompts_of(*(((own_run(i), 64),) for i in range(16)))
    got = []
    for stagger_s in (0.0, 0.001):  # 1 ms: the first request's step starts before the rest
        loop = ClosedLoop(concurrency, prompts=[64] * 16, outputs=[400] * 16, stagger_s=stagger_s)
        res = simulate([], Scripted(), knobs.policy(), users=loop, requests=own)
        assert all(r.finish_s is not None for r in res.requests)
        got.append((res.preemptions, res.steps))
    assert tuple(got) == STARVED[concurrency]
