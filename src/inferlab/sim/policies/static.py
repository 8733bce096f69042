"""Static batching: a batch forms from the queue and runs to its longest member before
anyone else joins."""

from __future__ import annotations

from inferlab.sim.policies.base import BatchScheduler
from inferlab.sim.running import Running


class StaticScheduler(BatchScheduler):
    def admission_limit(self, running: Running) -> int:
        return 0 if len(running) else self.max_batch
