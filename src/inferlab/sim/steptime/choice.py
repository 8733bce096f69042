"""What the user stated about a simulation's step time and scheduler, as typed values built
at the edge (`StepChoice`, `PolicyChoice`): every file they name is already read (an
engine-bench result, a bench run, a profile), so the chooser reads none.

A folder the user named is kept only as a label, for the words and the summary.json
fields that name it (`EngineBaseline.label`, `ServedProfile.label`, `StepChoice.calibrate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inferlab.engines.result import EngineBench
from inferlab.profile.record import ProfileRecord
from inferlab.sim.policies import KNOBS
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.summary import RunSummary

Basis = Literal["floor", "efficiency", "calibrated", "profiled"]
LLAMA_KNOBS = KNOBS["llama.cpp"]


@dataclass(frozen=True, slots=True)
class EngineBaseline:
    """An engine-bench result (`--engine-baseline DIR`, or a `--calibrate` naming one) and
    what sets the serving overhead beside it: stated, or measured from a served run."""

    bench: EngineBench
    label: str  # the folder as given: summary.json's `engine_baseline`
    served: RunSummary | None = None  # a bench run of the served engine (--calibrate RUN)
    serving_overhead_s: float | None = None  # --serving-overhead


@dataclass(frozen=True, slots=True)
class ServedProfile:
    """A served profile (`--profile DIR`), every cost of it times `step_scale`."""

    record: ProfileRecord
    label: str  # the folder as given: summary.json's `profile`, plan's basis line
    step_scale: float = 1.0  # --step-scale


@dataclass(frozen=True, slots=True)
class StepChoice:
    """What was stated about the step time (flags: --efficiency ... --force)."""

    efficiency: float = 1.0
    overhead_s: float = 0.0
    calibrate: str | None = None  # --calibrate as given (a label: plan's basis line)
    calibration: RunSummary | None = None  # the bench run to fit (no engine baseline)
    calibrate_levels: tuple[str, ...] | None = None
    engine: EngineBaseline | None = None
    profile: ServedProfile | None = None
    threads: int | None = None
    force: bool = False
    model_name: str | None = None  # --model, checked against a baseline's model
    knobs: tuple[tuple[str, int], ...] = ()  # the llama.cpp knobs given (attr, value)

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

    @property
    def profile_path(self) -> str | None:
        """The profile's folder as given (plan's basis line names it)."""
        return self.profile.label if self.profile is not None else None


@dataclass(frozen=True, slots=True)
class PolicyChoice:
    """What was stated about the scheduler (flags: --policy ... --block-tokens, and vLLM's
    knobs); no name: the profiled server's (llama.cpp) with a profile, else continuous
    batching."""

    name: str | None = None
    max_batch: int = 256
    chunked_prefill: int | None = None
    kv_capacity_bytes: float | None = None
    block_tokens: int = 16
    vllm: tuple[tuple[str, int], ...] = ()  # vLLM's knobs given (attr, value; 0/1 for on/off)


def llama_knobs(c: StepChoice) -> LlamaCppKnobs:
    """The knobs given; with a profile, the profiled server's slots and context otherwise."""
    given = dict(c.knobs)
    if c.profile is not None:
        given = profile_knobs(c.profile.record, given)
    return LlamaCppKnobs(**given)


def profile_knobs(profile: ProfileRecord, given: dict[str, int]) -> dict[str, int]:
    """llama.cpp's knobs for the profiled server: its slots and context unless given."""
    s = profile.server
    out = dict(given)
    if s.parallel is not None:
        out.setdefault("parallel", s.parallel)
    if s.ctx_per_slot is not None and "ctx_size" not in out:
        out["ctx_size"] = s.ctx_per_slot * out.get("parallel", s.parallel or 1)
    return out
