"""llama-server's scheduler in the simulator: slots, prompts in the decode batch, slot context."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from inferlab.errors import InferlabError
from inferlab.sim.engine import simulate
from inferlab.sim.policies import KNOBS, POLICIES
from inferlab.sim.policies.llamacpp import LlamaCppKnobs, LlamaCppScheduler
from inferlab.sim.steptime.base import DecodeBatch
from inferlab.sim.workload import Arrival


class Recorder:
    """A step time of 1 s; keeps each step's (prompt tokens per chunk, decoders)."""

    def __init__(self) -> None:
        self.steps: list[tuple[tuple[int, ...], int]] = []

    extra_ubatch_s = 0.0

    def split_decode_s(self, groups: tuple[int, ...]) -> float:
        return 0.0

    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        self.steps.append((tuple(n for n, _ in prefill), decode.count))
        return 1.0


def test_registered_with_its_knobs() -> None:
    assert POLICIES["llama.cpp"] is LlamaCppScheduler
    assert [k.flag for k in KNOBS["llama.cpp"]] == [
        "--parallel",
        "--n-batch",
        "--n-ubatch",
        "--ctx-size",
    ]


def test_a_request_waits_for_a_free_slot() -> None:
    rec = Recorder()
    arrivals = [Arrival(0.0, 8, 3), Arrival(0.1, 8, 3), Arrival(0.2, 8, 3)]
    res = simulate(arrivals, rec, LlamaCppKnobs(parallel=2).policy())
    first = {r.id: res.token_times(r)[0] for r in res.requests}
    # two slots: the second prompt joins the first one's decode; the third waits for a
    # free slot (the first request ends at t = 3), though it arrived at 0.2
    assert rec.steps[:2] == [((8,), 0), ((8,), 1)]
    assert first == {0: 1.0, 1: 2.0, 2: 4.0}
    assert max(r.finish_s or 0.0 for r in res.requests) == 6.0


def test_prompt_tokens_ride_with_the_decodes_up_to_n_batch() -> None:
    rec = Recorder()
    # one stream decoding; a 100-token prompt arrives while it does; n_batch 64
    arrivals = [Arrival(0.0, 8, 10), Arrival(1.5, 100, 2)]
    res = simulate(arrivals, rec, LlamaCppKnobs(parallel=2, n_batch=64).policy())
    # step 3 (t=2..3): the decoder's token + 63 prompt tokens; step 4: + the other 37
    assert rec.steps[2] == ((63,), 1)
    assert rec.steps[3] == ((37,), 1)
    first = res.requests[0]
    gaps = [b - a for a, b in zip(res.token_times(first), res.token_times(first)[1:], strict=False)]
    assert gaps == [1.0] * len(gaps)  # the prompt never stalled the stream


def test_slot_context_is_the_context_divided_by_the_slots_padded_as_llama_cpp() -> None:
    assert LlamaCppKnobs(parallel=4, ctx_size=4096).slot_ctx_tokens == 1024
    assert LlamaCppKnobs(parallel=4, ctx_size=512).slot_ctx_tokens == 256  # 128 padded to 256
    assert LlamaCppKnobs(parallel=4).slot_ctx_tokens == 1024  # as `inferlab serve`
    policy = LlamaCppKnobs(parallel=4, ctx_size=1024).policy()
    assert (policy.max_batch, policy.chunk_tokens, policy.kv_capacity_tokens) == (4, 2048, 1024)
    with pytest.raises(InferlabError, match=r"200 \+ 100 tokens does not fit a slot's context"):
        simulate([Arrival(0.0, 200, 100)], Recorder(), policy)


def test_the_registry_states_the_defaults() -> None:
    defaults = {k.attr: k.default for k in KNOBS["llama.cpp"]}
    assert LlamaCppKnobs(**defaults) == LlamaCppKnobs()


def test_knobs_below_one_are_refused() -> None:
    with pytest.raises(InferlabError, match="--n-ubatch must be >= 1"):
        LlamaCppKnobs(n_ubatch=0)
