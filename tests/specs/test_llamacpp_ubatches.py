"""llama.cpp's cut of a step into ubatches (split_equal, sequential), and the llama.cpp
policy's steps priced by it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from inferlab.sim.engine import simulate
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.sim.steptime.base import DecodeBatch
from inferlab.sim.workload import Arrival
from inferlab.specs.llamacpp_ubatches import count_ubatches, split_ubatches


@pytest.mark.parametrize(
    ("seqs", "n_ubatch", "want"),
    [
        ([(0, 1), (1, 1), (2, 1), (3, 1)], 512, 1),  # consecutive slots: one pass
        ([(0, 1), (2, 1), (4, 1), (6, 1)], 512, 4),  # none consecutive: one pass each
        ([(s, 1) for s in (0, 1, 2, 3, 5, 6, 7)], 512, 2),  # runs 0-3 and 5-7
        ([(0, 1), (1, 1), (2, 50)], 512, 2),  # the prompt's first token rides along
        ([(0, 1), (2, 1), (1, 50)], 512, 3),  # {0, 1}, {2}, then the prompt's rest
        ([(0, 1200)], 512, 3),  # a long prompt alone: ceil(1200 / 512)
        ([(3, 50), (4, 80)], 512, 2),  # two prompts: 50 each together, then 30
        ([(s, 1) for s in range(8)], 4, 2),  # llama.cpp stops adding past n_ubatch sequences (5, 3)
        ([], 512, 0),
    ],
)
def test_count_ubatches_as_split_equal_sequential(
    seqs: list[tuple[int, int]], n_ubatch: int, want: int
) -> None:
    assert count_ubatches(seqs, n_ubatch) == want


@pytest.mark.parametrize(
    ("seqs", "decoders", "want"),
    [
        ([(0, 1), (1, 1), (2, 1), (3, 1)], 4, (1, (4,))),
        ([(0, 1), (2, 1), (4, 1), (6, 1)], 4, (4, (1, 1, 1, 1))),
        ([(0, 1), (1, 1), (3, 1), (5, 40)], 3, (3, (2, 1))),
        # a prompt in slot 2 rides with decoders 0 and 1 for its first token; decoder 3
        # comes before it in batch order, so it is not taken: a ubatch of its own
        ([(0, 1), (1, 1), (3, 1), (2, 40)], 3, (3, (2, 1))),
        ([(4, 30)], 0, (1, ())),
    ],
)
def test_split_ubatches_says_how_many_decoders_each_ubatch_carries(
    seqs: list[tuple[int, int]], decoders: int, want: tuple[int, tuple[int, ...]]
) -> None:
    assert split_ubatches(seqs, 512, decoders) == want
    assert want[0] == count_ubatches(seqs, 512)


class UbatchPriced:
    """1 s a step, plus 0.25 s for each ubatch past the first; keeps the decoder groups
    of each step whose decoders were cut into several ubatches."""

    extra_ubatch_s = 0.25

    def __init__(self) -> None:
        self.groups: list[tuple[int, ...]] = []

    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        return 1.0

    def split_decode_s(self, groups: tuple[int, ...]) -> float:
        self.groups.append(groups)
        return 0.0


def test_llamacpp_steps_pay_for_slots_that_are_not_consecutive() -> None:
    # Four slots; an idle server hands out the slot released longest ago, the highest of
    # equals. t=0: requests 0 and 1 take slots 3 and 2, their prompts one ubatch ({2, 3}):
    # 1 s. t=1: both decode, one ubatch: 1 s; request 1 (2 tokens) is done at t=2.
    # Request 2 arrives at 2.5, mid-step, and joins at t=3: slots 0 and 1 were never used,
    # so it takes slot 1; slot 3 decodes beside it, and 3 and 1 are not consecutive: two
    # ubatches, 1.25 s. Its next step decodes slots 1 and 3: 1.25 s again.
    arrivals = [Arrival(0.0, 8, 6), Arrival(0.0, 8, 2), Arrival(2.5, 8, 2)]
    priced = UbatchPriced()
    res = simulate(arrivals, priced, LlamaCppKnobs(parallel=4).policy())
    tt = {r.id: res.token_times(r) for r in res.requests}
    assert tt[1] == [1.0, 2.0]
    assert tt[2] == [4.25, 5.5]
    assert tt[0][:4] == [1.0, 2.0, 3.0, 4.25]
    # only the step from 4.25 cut its decoders (slots 1 and 3) into two ubatches: at 3
    # the prompt's ubatch carried no decoder
    assert priced.groups == [(1, 1)]


@pytest.mark.parametrize("tokens", [1, 16, 511, 512, 513, 1200])
def test_the_profiles_count_for_a_prompt_alone_is_the_same_rule(tokens: int) -> None:
    from inferlab.profile.probes import ubatches_of

    assert ubatches_of([(0, tokens)]) == max(1, -(-tokens // 512))
