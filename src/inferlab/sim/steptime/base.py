"""The step-time interface: how long one engine iteration takes for its prefill tokens and
decodes, whatever the answer stands on (the sources are this package's other modules).

The simulator asks one question of its model: given the prefill chunks and the decode
contexts in this iteration, how long does it take (`StepTimeModel.step_time_s`)? The
chooser (chooser.py) answers with a `StepModel`: the model, its description for
summary.json, and the cost and hardware a roofline stands on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from inferlab.sim.request import NO_COSTS, RequestCosts
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec


@dataclass(slots=True)  # not frozen: one is built per engine step, and frozen init is slower
class DecodeBatch:
    """The decoding sequences of one step: how many, their contexts summed, and (on demand,
    for models whose cost is not linear in context, e.g. sliding-window attention) each."""

    count: int
    context_sum: int
    contexts: Callable[[], list[int]]

    @classmethod
    def of(cls, contexts: list[int]) -> DecodeBatch:
        return cls(len(contexts), sum(contexts), lambda: contexts)


class StepTimeModel(Protocol):
    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        """prefill: (chunk tokens, tokens cached before it) per sequence."""
        ...

    @property
    def extra_ubatch_s(self) -> float:
        """What each physical ubatch past the first adds to a step (Batch.ubatches); 0 for
        a model that does not tell them apart."""
        ...

    def split_decode_s(self, groups: tuple[int, ...]) -> float:
        """What decoders cut into ubatches of `groups` decoders cost beyond one ubatch of
        them all (Batch.decode_groups); 0 for a model whose decode cost is linear."""
        ...


@runtime_checkable
class BatchLimited(Protocol):
    """A step time measured up to some batch (an engine baseline, a profile): it answers for
    `batch_limit` decoders at most (None: forced, no limit). The simulator asks it of every
    batch it reaches (sim/engine.py), so an open loop is refused only by a batch it runs."""

    @property
    def batch_limit(self) -> int | None: ...

    def check_batch(self, batch: int, where: str = "") -> None:
        """Refuse `batch` decoders past the limit; `where` opens the message (which step)."""
        ...


class WholeBatch:
    """A step-time model that prices a step as one batch: no ubatch past the first costs
    more, and decoders cut into groups cost what one group of them all does (the roofline
    and the fit to a bench run; llama.cpp's split is the engine's and the profile's)."""

    __slots__ = ()

    @property
    def extra_ubatch_s(self) -> float:
        return 0.0

    def split_decode_s(self, groups: tuple[int, ...]) -> float:
        return 0.0


@dataclass(frozen=True, slots=True)
class StepModel:
    """The step-time model, its description (summary.json's simulation block), and the cost
    and hardware it stands on (None for a measured model)."""

    model: StepTimeModel
    description: dict[str, object]
    cost: ModelCost | None = None
    hw: HardwareSpec | None = None
    costs: RequestCosts = NO_COSTS  # per-request serving costs beside the steps (a profile's)
