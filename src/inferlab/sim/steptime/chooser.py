"""The step time a simulation runs on and the scheduler that runs it, chosen once from what
the user stated (choice.py's `StepChoice`, `PolicyChoice`: typed, every file read at the
edge).

The step time, first source that applies (`SOURCES`): a served profile (profile.py: its
step model and per-request costs), an engine-bench baseline (engine_baseline.py), a fit to
a bench run (calibrated.py), else the roofline floor of the model on the hardware, slowed
to a stated efficiency (roofline.py). The KV cache holds what was stated, else the memory
beside the weights (physics/capacity.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from inferlab.errors import ConfigError
from inferlab.physics.capacity import capacity
from inferlab.sim.limits import MAX_BLOCK_TOKENS, at_least
from inferlab.sim.policies.vllm_knobs import VllmKnobs
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime.base import StepModel
from inferlab.sim.steptime.calibrated import LLAMA_CPP_BATCH_TOKENS, fitted_model
from inferlab.sim.steptime.choice import LLAMA_KNOBS, PolicyChoice, StepChoice, llama_knobs
from inferlab.sim.steptime.engine_baseline import engine_model
from inferlab.sim.steptime.profile import check_identity, profiled_model, served_policy
from inferlab.sim.steptime.roofline import RooflineStepTime
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec

# (model cost, hardware), resolved only when the roofline needs them (a baseline does not)
Resolve = Callable[[], tuple[ModelCost, HardwareSpec]]
Source = Callable[[StepChoice], StepModel | None]  # None: the choice does not name it


def _profiled(choice: StepChoice) -> StepModel | None:
    """The served profile's step model and request costs, refused for another server."""
    p = choice.profile
    if p is None:
        return None
    parallel = dict(choice.knobs).get("parallel")
    check_identity(p.record, choice.model_name, choice.threads, parallel, choice.force)
    model, desc, costs = profiled_model(p.record, p.label, choice.force, p.step_scale)
    return StepModel(model, desc, costs=costs)


def _calibrated(choice: StepChoice) -> StepModel | None:
    """The step time fitted to a bench run (--calibrate RUN without an engine baseline)."""
    if choice.calibration is None or choice.engine is not None:
        return None
    return fitted_model(choice.calibration, choice.calibrate_levels)


# The measured sources, first that applies; the roofline is the floor beneath them all.
SOURCES: tuple[Source, ...] = (_profiled, engine_model, _calibrated)


def _roofline(choice: StepChoice, resolve: Resolve) -> StepModel:
    """The floor of the model on the hardware, slowed to the stated efficiency."""
    if not 0 < choice.efficiency <= 1:
        raise ConfigError("{efficiency} must be in (0, 1], e.g. 0.7")
    if not math.isfinite(choice.overhead_s):
        raise ConfigError("{overhead_s} must be a finite time, e.g. 1ms")
    cost, hw = resolve()
    desc: dict[str, object] = {
        "step_time_model": "roofline",
        "efficiency": choice.efficiency,
        "overhead_s": choice.overhead_s,
        "model": cost.name,
        "hardware": hw.name,
    }
    return StepModel(
        RooflineStepTime(cost, hw, choice.efficiency, choice.overhead_s), desc, cost, hw
    )


def choose_step_model(choice: StepChoice, resolve: Resolve) -> StepModel:
    """The step-time model (profile, engine baseline, fitted or roofline) and its description."""
    for source in SOURCES:
        found = source(choice)
        if found is not None:
            return found
    return _roofline(choice, resolve)


def kv_capacity_tokens(kv_bytes: float | None, sm: StepModel) -> int | None:
    """Tokens the KV cache holds: as stated, else memory beside the weights (physics)."""
    cap, cost, hw = kv_bytes, sm.cost, sm.hw
    if cap is not None and not math.isfinite(cap):
        raise ConfigError("{kv_capacity_bytes} must be a finite size, e.g. 60GB")
    if cap is None and cost is not None and hw is not None and hw.memory_bytes > 0:
        cap = capacity(cost, hw, 1).free_for_kv_bytes
        if cap <= 0:
            raise ConfigError("the weights do not fit in memory: add {tp} or state {memory_bytes}")
    if cap is None or cost is None or cost.kv_bytes_per_token <= 0:
        return None
    return int(cap // cost.kv_bytes_per_token)


def llama_policy(name: str, c: StepChoice) -> Policy | None:
    """--policy llama.cpp: its knobs, as llama-server's; None for another policy (whose
    command line may not name them)."""
    if name == "llama.cpp":
        return llama_knobs(c).policy()
    given = dict(c.knobs)
    named = [k.flag for k in LLAMA_KNOBS if k.attr in given]
    if named:
        raise ConfigError(f"{', '.join(named)} apply to {{policy}} llama.cpp only")
    return None


def vllm_policy(name: str, pc: PolicyChoice, sm: StepModel) -> Policy | None:
    """--policy vllm: its knobs, as vLLM's (its KV blocks: as given, else the KV capacity's);
    None for another policy (whose command line may not name them)."""
    if name == "vllm":
        knobs = VllmKnobs.given(pc.vllm)
        return knobs.policy(kv_capacity_tokens(pc.kv_capacity_bytes, sm))
    if pc.vllm:
        named = ", ".join(f"{{{a}}}" for a, _ in pc.vllm)
        raise ConfigError(f"{named} apply to {{policy}} vllm only")
    return None


def choose_policy(pc: PolicyChoice, step: StepChoice, sm: StepModel) -> Policy:
    """The scheduler (sim.scheduler.Policy): llama.cpp's or vLLM's from their knobs, or the
    named one."""
    name = pc.name or ("llama.cpp" if step.profile is not None else "continuous")
    at_least(pc.max_batch, 1, "max_batch")
    at_least(pc.block_tokens, 1, "block_tokens", MAX_BLOCK_TOKENS)
    served = served_policy(step.profile.record, pc, step) if step.profile is not None else None
    if served is not None:  # a vLLM profile, no --policy: its knobs (profile.py)
        return served
    chunk = pc.chunked_prefill
    if chunk is not None:
        at_least(chunk, 1, "chunked_prefill")
        if name != "continuous":
            raise ConfigError("{chunked_prefill} applies to {policy} continuous only")
    elif step.calibrate and name == "continuous":
        chunk = LLAMA_CPP_BATCH_TOKENS  # the fit assumed prompts ride in the decode batch
    llama = llama_policy(name, step)  # --policy llama.cpp and its knobs
    if llama is not None:
        return llama
    vllm = vllm_policy(name, pc, sm)  # --policy vllm and its knobs
    if vllm is not None:
        return vllm
    tokens = kv_capacity_tokens(pc.kv_capacity_bytes, sm)
    return Policy(name, pc.max_batch, chunk, tokens, pc.block_tokens)
