"""How a paired run (bench --url A --url B) cuts each level into blocks, and their order.

A block is one endpoint's short closed-loop run at the level's concurrency: N requests
per stream (--block-requests N, default 2), N x c requests at c streams, only that
endpoint loaded while it runs. A level's blocks come in rounds, one block of each endpoint
per round; half the rounds run in one random order of the endpoints and half in its mirror
(two endpoints: as many AB as BA, e.g. ABBA BAAB ...), the rounds shuffled with the run's
seed. Both endpoints so see the same stretches of the machine, and a steady drift adds
as much to B/A in the AB rounds as it takes away in the BA ones (randomized multiple
interleaved trials, Abedi and Brecht, ICPE 2017; duet benchmarking, Bulej et al., ICPE 2020).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from inferlab.load.spec import Level

DEFAULT_BLOCK_REQUESTS = 2  # per stream: a block is a few rounds of the level's streams
# Fewer pairs leave the t interval too wide to find anything (t(0.975, 3) = 3.18 already
# doubles z): a level gets at least this many, with blocks made smaller to stay at the
# requests asked, down to one request per stream.
MIN_PAIRS = 4


@dataclass(frozen=True, slots=True)
class PairedTarget:
    """One endpoint of a paired run: its label ("base", "new", or the user's) and URL."""

    label: str
    url: str


@dataclass(frozen=True, slots=True)
class PairedOptions:
    """bench --url A --url B: the endpoints (the first is the baseline) and the block size."""

    targets: tuple[PairedTarget, ...]
    block_requests: int = DEFAULT_BLOCK_REQUESTS  # per stream

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(t.label for t in self.targets)


@dataclass(frozen=True, slots=True)
class BlockPlan:
    """One level's blocks: `rounds` of one block per endpoint (= block pairs per
    comparison, even), each `per_block` measured requests."""

    rounds: int
    per_block: int


def block_plan(requests: int, streams: int, per_stream: int) -> BlockPlan:
    """Blocks of `per_stream` requests per stream, as many as hold `requests` per endpoint
    (--requests-per-level x --repeat), at least MIN_PAIRS and an even number (order-
    balanced); a level too short for MIN_PAIRS blocks of that size gets smaller blocks."""
    streams = max(1, streams)
    fit = max(1, requests // (streams * MIN_PAIRS))  # requests per stream that still give 4
    size = streams * max(1, min(per_stream, fit))
    rounds = max(MIN_PAIRS, math.ceil(requests / size))
    return BlockPlan(rounds + rounds % 2, size)


def block_order(endpoints: int, rounds: int, seed: int) -> tuple[int, ...]:
    """The endpoints' indices in the order their blocks run: `rounds` rounds (even), half
    a random order and half its mirror, shuffled; the same seed gives the same order."""
    rng = random.Random(seed)
    orders: list[list[int]] = []
    for _ in range(rounds // 2):
        one = list(range(endpoints))
        rng.shuffle(one)
        orders += [one, one[::-1]]
    rng.shuffle(orders)
    return tuple(i for order in orders for i in order)


@dataclass(frozen=True, slots=True)
class LevelBlocks:
    """One level as a paired run runs it: its plan and its blocks' order (endpoint indices)."""

    level: Level
    plan: BlockPlan
    order: tuple[int, ...]

    def round_of(self, block: int) -> int:
        """The round a block (its place in the order) belongs to: its pair in a comparison."""
        return block // (len(self.order) // self.plan.rounds)


def side_level(level: Level, label: str) -> Level:
    """The level as one endpoint's: "base c=4", its records' and its summary's label."""
    return Level(level.kind, level.value, f"{label} {level.label}")
