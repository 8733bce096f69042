"""Sequential: one request at a time, start to finish (a server with no batching)."""

from __future__ import annotations

from inferlab.sim.policies.base import BatchScheduler
from inferlab.sim.running import Running


class SequentialScheduler(BatchScheduler):
    def admission_limit(self, running: Running) -> int:
        return 1
