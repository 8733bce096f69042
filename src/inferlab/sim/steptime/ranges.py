"""Where a measured step time answers: an engine baseline or a profile measured batches up
to some size; a simulation whose batches go past 2x that is refused before it starts
(unless forced), and the lines that state what the fit assumes are said."""

from __future__ import annotations

from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime.base import StepTimeModel
from inferlab.sim.steptime.engine import EngineStepTime
from inferlab.sim.steptime.profile import ProfileStepTime


def largest_batch(policy: Policy, users: int | None) -> int:
    """The largest batch a simulation can run: slots, --max-batch, or the closed loop's users."""
    return min(policy.max_batch, users) if users else policy.max_batch


def check_batches(model: StepTimeModel, policy: Policy, users: int | None) -> list[str]:
    """Refuse a batch past the model's limit up front; the lines that state the fit."""
    if not isinstance(model, EngineStepTime | ProfileStepTime):
        return []
    most = largest_batch(policy, users)
    model.check_batch(most)
    return model.describe(most)
