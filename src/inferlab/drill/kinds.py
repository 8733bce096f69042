"""The card kinds, in the deck's order, and the one way to make a card: `make_card(kind, seed)`.

One kind per reasoning pattern of deck 01 (Q1-Q7) and lesson 16; the same
(kind, seed) always gives the same card (a string seed is hashed stably).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from inferlab.drill import kinds_compute as compute
from inferlab.drill import kinds_memory as memory
from inferlab.drill.cards import Card
from inferlab.errors import InferlabError

Builder = Callable[[random.Random, int], Card]

KINDS: dict[str, Builder] = {
    "ceiling": memory.ceiling,  # Q1, L16: bytes / bandwidth
    "claim": memory.claim,  # Q1: a rate checked against the ceiling
    "mbu": memory.mbu,  # Q1 follow-up, Q5: floor / measured, TP included
    "gpu-util": memory.gpu_util,  # Q5: GPU-util is not MBU
    "batching": memory.batching,  # Q3, Q6 follow-up: each user and the total
    "max-batch": memory.max_batch,  # L16: KV beside the weights
    "prefill": compute.prefill,  # Q2: prefill vs decode step, the stall
    "ridge": compute.ridge,  # Q2 follow-up
    "crossover": compute.crossover,  # Q4: compute-bound batch, with and without KV
    "cost": compute.cost,  # Q6: $ per million tokens
    "amdahl": compute.amdahl_card,  # Q7: add new times, never speedups
}


def kind_names() -> list[str]:
    return list(KINDS)


def check_kinds(names: list[str]) -> list[str]:
    """Unknown names are a user mistake: say which, and list the kinds."""
    bad = [n for n in names if n not in KINDS]
    if bad:
        raise InferlabError(f"unknown kind {', '.join(bad)}; kinds: {', '.join(KINDS)}")
    return names


def make_card(name: str, seed: int) -> Card:
    check_kinds([name])
    return KINDS[name](random.Random(f"inferlab-drill:{name}:{seed}"), seed)
