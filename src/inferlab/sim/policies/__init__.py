"""Scheduling policies, one per file; adding a policy is adding a file and a line here."""

from __future__ import annotations

from inferlab.sim.policies.base import BatchScheduler
from inferlab.sim.policies.continuous import ContinuousScheduler
from inferlab.sim.policies.sequential import SequentialScheduler
from inferlab.sim.policies.static import StaticScheduler

POLICIES: dict[str, type[BatchScheduler]] = {
    "sequential": SequentialScheduler,
    "static": StaticScheduler,
    "continuous": ContinuousScheduler,
}
