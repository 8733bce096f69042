"""The scheduler seam: a policy picks each engine step's batch from the queue and running set.

A `Policy` names a scheduler and its knobs (what the command line describes);
`sim.policies.make_scheduler` builds the one class that implements it (one
file per policy). The engine asks only `next_batch` and reads `preemptions`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Protocol

from inferlab.sim.request import SimRequest
from inferlab.sim.running import Running


@dataclass(frozen=True, slots=True)
class Policy:
    name: str  # a key of sim.policies.POLICIES: "sequential", "static", "continuous", ...
    max_batch: int = 256
    chunk_tokens: int | None = None  # chunked prefill (continuous): prompt tokens per step
    kv_capacity_tokens: int | None = None  # None: unlimited
    block_tokens: int = 16
    ubatch_tokens: int | None = None  # llama.cpp's n_ubatch: its batch is cut in ubatches
    # A policy's own knobs beyond these fields, (attr, value) as its registry names them
    # (sim/policies/vllm_knobs.py: long_prefill_token_threshold, enable_chunked_prefill, ...).
    knobs: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Batch:
    """One engine step: prompt chunks to prefill, and whether the running decoders decode."""

    chunks: tuple[tuple[SimRequest, int], ...]  # (request, prompt tokens this step)
    decodes: bool
    ubatches: int = 1  # physical passes (specs/llamacpp_ubatches.py); each past one costs more
    # the decoders in each ubatch that carries any (llama.cpp: slots not consecutive);
    # (): all in one
    decode_groups: tuple[int, ...] = ()

    def size(self, running: Running) -> int:
        return len(self.chunks) + (running.decoding if self.decodes else 0)


DECODE_ONLY = Batch((), True)  # the common step, shared rather than built each time


class Scheduler(Protocol):
    preemptions: int

    def next_batch(self, waiting: deque[SimRequest], running: Running) -> Batch | None:
        """Admit from `waiting` into `running` and pick the next step's work (None: idle)."""
        ...
