"""Scheduling policies, one per file; adding a policy is adding a file and a line here."""

from __future__ import annotations

from inferlab.errors import InferlabError
from inferlab.sim.policies.base import BatchScheduler
from inferlab.sim.policies.continuous import ContinuousScheduler
from inferlab.sim.policies.llamacpp import KNOBS as LLAMA_CPP_KNOBS
from inferlab.sim.policies.llamacpp import Knob, LlamaCppScheduler
from inferlab.sim.policies.sequential import SequentialScheduler
from inferlab.sim.policies.static import StaticScheduler
from inferlab.sim.policies.vllm import VllmScheduler
from inferlab.sim.policies.vllm_knobs import VLLM_KNOBS
from inferlab.sim.scheduler import Policy, Scheduler

POLICIES: dict[str, type[BatchScheduler]] = {
    "sequential": SequentialScheduler,
    "static": StaticScheduler,
    "continuous": ContinuousScheduler,
    "llama.cpp": LlamaCppScheduler,
    "vllm": VllmScheduler,
}
# A policy's own flags, named once: the command line is built from them.
KNOBS: dict[str, tuple[Knob, ...]] = {"llama.cpp": LLAMA_CPP_KNOBS, "vllm": VLLM_KNOBS}


def make_scheduler(policy: Policy) -> Scheduler:
    try:
        cls = POLICIES[policy.name]
    except KeyError:
        raise InferlabError(
            f"unknown policy {policy.name!r}: choose one of {', '.join(POLICIES)}"
        ) from None
    return cls(policy)
