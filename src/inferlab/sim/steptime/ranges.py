"""Where a measured step time answers: an engine baseline or a profile measured batches up
to some size, and answers for 2x that (unless forced). A closed loop's batch is known before
it runs (its users, at most the policy's max batch), so past the limit it is refused before
the simulation starts. An open loop's is not (vLLM's max_num_seqs of 128 bounds it, yet at
1 request/s it stays near 2): the simulation refuses the batch a step reaches (sim/engine.py),
and the lines that state what the fit assumes are said at the largest batch it ran."""

from __future__ import annotations

from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime.base import StepTimeModel
from inferlab.sim.steptime.engine import EngineStepTime
from inferlab.sim.steptime.profile import ProfileStepTime


def largest_batch(policy: Policy, users: int | None) -> int:
    """The largest batch a simulation can run: slots, --max-batch, or the closed loop's users."""
    return min(policy.max_batch, users) if users else policy.max_batch


def check_batches(model: StepTimeModel, policy: Policy, users: int | None) -> list[str]:
    """A closed loop of `users` whose batch passes the model's limit refused up front (an
    open loop, None, is checked as it runs); the lines that state the fit, at the largest
    batch the simulation can run."""
    most = largest_batch(policy, users)
    if users and isinstance(model, EngineStepTime | ProfileStepTime):
        model.check_batch(most)
    return fit_lines(model, most)


def fit_lines(model: StepTimeModel, most_decoders: int) -> list[str]:
    """The lines that state the fit, for a simulation whose largest batch was `most_decoders`."""
    if not isinstance(model, EngineStepTime | ProfileStepTime):
        return []
    return model.describe(most_decoders)
