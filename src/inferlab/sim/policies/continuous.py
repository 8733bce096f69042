"""Continuous batching: requests join and leave the running batch at every step.

With `chunk_tokens` set (chunked prefill), at most that many prompt tokens ride
in each step beside the decodes, so a long prompt never stalls the streams for
more than one chunk's compute; without it a prompt is prefilled in a step of its
own and every stream waits for it.
"""

from __future__ import annotations

from inferlab.sim.policies.base import BatchScheduler
from inferlab.sim.running import Running
from inferlab.sim.scheduler import Policy


class ContinuousScheduler(BatchScheduler):
    def __init__(self, policy: Policy) -> None:
        super().__init__(policy)
        self.chunk_tokens = policy.chunk_tokens

    def admission_limit(self, running: Running) -> int:
        return self.max_batch
