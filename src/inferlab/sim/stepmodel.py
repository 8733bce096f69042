"""The step time a simulation runs on and the scheduler that runs it, chosen once from what
the user stated (`StepChoice`, `PolicyChoice`: typed, built from the flags at the edge).

The step time, first that applies: a served profile (sim/profiled.py: its step model and
per-request costs), an engine-bench baseline (sim/baseline.py), a fit to a bench run
(sim/calibrate.py), else the roofline floor of the model on the hardware, slowed
to a stated efficiency. The KV cache holds what was stated, else the memory beside the
weights (physics/capacity.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from inferlab.engine_result import EngineBench
from inferlab.errors import InferlabError
from inferlab.sim.request import NO_COSTS, RequestCosts
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime import StepTimeModel
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec

if TYPE_CHECKING:
    from inferlab.profile.record import ProfileRecord

Basis = Literal["floor", "efficiency", "calibrated", "profiled"]
# (model cost, hardware), resolved only when the roofline needs them (a baseline does not)
Resolve = Callable[[], tuple[ModelCost, HardwareSpec]]


@dataclass(frozen=True, slots=True)
class StepChoice:
    """What was stated about the step time (flags: --efficiency ... --force)."""

    efficiency: float = 1.0
    overhead_s: float = 0.0
    calibrate: Path | None = None  # a bench run (or an engine-bench folder)
    calibrate_levels: tuple[str, ...] | None = None
    engine_baseline: Path | None = None  # the engine-bench folder (sim/baseline.py)
    baseline: EngineBench | None = None  # what it holds, read at the edge
    served_run: Path | None = None  # a bench run beside the baseline: the serving overhead
    serving_overhead_s: float | None = None
    threads: int | None = None
    force: bool = False
    model_name: str | None = None  # --model, checked against a baseline's model
    knobs: tuple[tuple[str, int], ...] = ()  # the llama.cpp knobs given (attr, value)
    profile_path: Path | None = None  # --profile DIR (sim/profiled.py)
    profile: ProfileRecord | None = None  # what it holds, read at the edge
    step_scale: float = 1.0  # --step-scale: every cost of the profile times this

    @property
    def basis(self) -> Basis:
        """What the step time stands on: a served profile, a measured run, a stated
        efficiency, or the floor."""
        if self.profile is not None:
            return "profiled"
        if self.calibrate:
            return "calibrated"
        if self.efficiency != 1.0 or self.overhead_s:
            return "efficiency"
        return "floor"


@dataclass(frozen=True, slots=True)
class PolicyChoice:
    """What was stated about the scheduler (flags: --policy ... --block-tokens); no name:
    the profiled server's (llama.cpp) with a profile, else continuous batching."""

    name: str | None = None
    max_batch: int = 256
    chunked_prefill: int | None = None
    kv_capacity_bytes: float | None = None
    block_tokens: int = 16


@dataclass(frozen=True, slots=True)
class StepModel:
    """The step-time model, its description (summary.json's simulation block), and the cost
    and hardware it stands on (None for a fitted model)."""

    model: StepTimeModel
    description: dict[str, Any]
    cost: ModelCost | None = None
    hw: HardwareSpec | None = None
    costs: RequestCosts = NO_COSTS  # per-request serving costs beside the steps (a profile's)


def _profiled(choice: StepChoice) -> StepModel | None:
    """The served profile's step model and request costs, refused for another server."""
    from inferlab.sim.profiled import check_identity, profiled_model

    if choice.profile is None:
        return None
    parallel = dict(choice.knobs).get("parallel")
    check_identity(choice.profile, choice.model_name, choice.threads, parallel, choice.force)
    path, scale = str(choice.profile_path), choice.step_scale
    model, desc, costs = profiled_model(choice.profile, path, choice.force, scale)
    return StepModel(model, desc, costs=costs)


def choose_step_model(choice: StepChoice, resolve: Resolve) -> StepModel:
    """The step-time model (engine baseline, fitted or roofline) and its description."""
    from inferlab.sim.baseline import engine_model
    from inferlab.sim.calibrate import fit_from_summary
    from inferlab.sim.steptime import RooflineStepTime

    profiled = _profiled(choice)
    if profiled is not None:
        return profiled
    engine = engine_model(choice)
    if engine is not None:
        return StepModel(*engine)
    if choice.calibrate and choice.baseline is None:
        from inferlab.rundir import load_summary

        labels = list(choice.calibrate_levels) if choice.calibrate_levels else None
        fitted = fit_from_summary(load_summary(choice.calibrate), labels)
        desc = {
            "step_time_model": "fitted",
            "base_s": fitted.base_s,
            "per_decode_s": fitted.per_decode_s,
            "per_prefill_token_s": fitted.per_prefill_token_s,
            "source": fitted.source,
        }
        return StepModel(fitted, desc)
    if not 0 < choice.efficiency <= 1:
        raise InferlabError("--efficiency must be in (0, 1], e.g. 0.7")
    if not math.isfinite(choice.overhead_s):
        raise InferlabError("--overhead must be a finite time, e.g. 1ms")
    cost, hw = resolve()
    desc = {
        "step_time_model": "roofline",
        "efficiency": choice.efficiency,
        "overhead_s": choice.overhead_s,
        "model": cost.name,
        "hardware": hw.name,
    }
    return StepModel(
        RooflineStepTime(cost, hw, choice.efficiency, choice.overhead_s), desc, cost, hw
    )


def kv_capacity_tokens(kv_bytes: float | None, sm: StepModel) -> int | None:
    """Tokens the KV cache holds: as stated, else memory beside the weights (physics)."""
    from inferlab.physics.capacity import capacity

    cap, cost, hw = kv_bytes, sm.cost, sm.hw
    if cap is not None and not math.isfinite(cap):
        raise InferlabError("--kv-capacity must be a finite size, e.g. 60GB")
    if cap is None and cost is not None and hw is not None and hw.memory_bytes > 0:
        cap = capacity(cost, hw, 1).free_for_kv_bytes
        if cap <= 0:
            raise InferlabError("the weights do not fit in memory: add --tp or state --memory")
    if cap is None or cost is None or cost.kv_bytes_per_token <= 0:
        return None
    return int(cap // cost.kv_bytes_per_token)


def choose_policy(pc: PolicyChoice, step: StepChoice, sm: StepModel) -> Policy:
    """The scheduler (sim.scheduler.Policy): llama.cpp's from its knobs, or the named one."""
    from inferlab.sim.baseline import llama_policy
    from inferlab.sim.limits import MAX_BLOCK_TOKENS, at_least

    name = pc.name or ("llama.cpp" if step.profile is not None else "continuous")
    at_least(pc.max_batch, 1, "--max-batch")
    at_least(pc.block_tokens, 1, "--block-tokens", MAX_BLOCK_TOKENS)
    chunk = pc.chunked_prefill
    if chunk is not None:
        at_least(chunk, 1, "--chunked-prefill")
        if name != "continuous":
            raise InferlabError("--chunked-prefill applies to --policy continuous only")
    elif step.calibrate and name == "continuous":
        from inferlab.sim.calibrate import LLAMA_CPP_BATCH_TOKENS

        chunk = LLAMA_CPP_BATCH_TOKENS  # the fit assumed prompts ride in the decode batch
    llama = llama_policy(name, step)  # --policy llama.cpp and its knobs
    if llama is not None:
        return llama
    tokens = kv_capacity_tokens(pc.kv_capacity_bytes, sm)
    return Policy(name, pc.max_batch, chunk, tokens, pc.block_tokens)
