"""The step time of a served profile (`inferlab profile`): the simulator's seam, filled.

The coefficients come from profile/fit.py (one formula: `ProfileFit.step_s`); this
module adapts them to `StepTimeModel.step_time_s(prefill, decode)` and states where the
simulation leaves the profiled range, as the engine baseline does (engine.py):
a batch past the largest profiled is extrapolated along the fitted line, and said so;
past 2x it is refused unless forced. Prompts and contexts longer than profiled are
extrapolated and said so (they are linear terms, never refused).

A request's own cost (`ProfileFit.request_cost_s`: `request_overhead_s` + a per-prompt-token
part) is not part of any step: the simulator adds it once per request, at arrival (tokenise,
template, HTTP), before the request can join a step (`costs_of`: `RequestCosts`).

The profile names the server it measured; a simulation of another model, thread count or
`--parallel` is refused unless forced (profile/identity.py). Without `--policy`, the
profiled server's scheduler is simulated: llama.cpp's, at the profile's slots and context
per slot (choice.py's `profile_knobs`); for a vLLM profile, continuous batching at the
server's max_num_seqs, token budget, KV blocks and block size (`served_policy`, the one
place to switch to `--policy vllm`). A vLLM server has no slots: its batch is limited by
the batches the profile measured (2x them, as above), not by a slot count: a closed loop
past that is refused before it runs; an open loop only when a step reaches such a batch
(sim/engine.py), since at a low rate vLLM's max_num_seqs is never approached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from inferlab.errors import ConfigError
from inferlab.profile.fit import ProfileFit, fit_profile
from inferlab.profile.identity import check_profile_matches
from inferlab.profile.record import ProfileRecord, ServerIdentity
from inferlab.sim.policies.vllm_knobs import VllmKnobs
from inferlab.sim.request import RequestCosts
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime.base import DecodeBatch
from inferlab.sim.steptime.choice import LLAMA_KNOBS, PolicyChoice, StepChoice
from inferlab.sim.steptime.engine import EXTRAPOLATION_LIMIT

# How to profile larger batches, by engine: llama-server's are its slots; vLLM's are as
# many streams at once, and the budget sets how many (profile/probe_plan.py)
WIDER = {
    "llamacpp": "profile with more slots (--budget 2 widens the grid)",
    "vllm": "profile at --budget 2 (it measures vLLM's batches up to 32), cap the batch "
    "with {max_batch}",
}


@dataclass(frozen=True, slots=True)
class ProfileStepTime:
    fit: ProfileFit
    force: bool = False  # allow batches past 2x the largest profiled
    source: str = "profile"
    engine: str = "llamacpp"  # the profiled server's (ServerIdentity.kind)

    @classmethod
    def from_profile(
        cls, profile: ProfileRecord, force: bool = False, scale: float = 1.0
    ) -> ProfileStepTime:
        """The profile's fit; `scale` != 1 multiplies every time term (--step-scale)."""
        fit = fit_profile(profile.observations)
        model = cls(fit, force, f"profile of {profile.url}", profile.server.kind)
        return model if scale == 1.0 else model.scaled(scale)

    def scaled(self, factor: float) -> ProfileStepTime:
        """The same model with every time term x `factor`."""
        return ProfileStepTime(
            self.fit.scaled(factor),
            self.force,
            f"{self.source}, every cost x{factor:g}",
            self.engine,
        )

    @property
    def request_overhead_s(self) -> float:
        """Paid once per request at arrival, outside every step (plus the per-token part)."""
        return self.fit.request_overhead_s

    @property
    def extra_ubatch_s(self) -> float:
        return self.fit.per_ubatch_s

    def split_decode_s(self, groups: tuple[int, ...]) -> float:
        return self.fit.split_decode_s(groups)

    @property
    def batch_limit(self) -> int | None:
        return None if self.force else int(EXTRAPOLATION_LIMIT * max(self.fit.max_decoders, 1))

    def check_batch(self, batch: int, where: str = "") -> None:
        """Refuse `batch` decoders past `batch_limit`; `where` opens the message."""
        limit = self.batch_limit
        if limit is not None and batch > limit:
            raise ConfigError(
                f"{where}batch {batch} is beyond 2x the largest batch the profile measured "
                f"({self.fit.max_decoders}), a limit of {limit} decoders: "
                f"{WIDER.get(self.engine, WIDER['llamacpp'])} or add {{force}} to extrapolate "
                "anyway"
            )

    def step_time_s(self, prefill: Sequence[tuple[int, int]], decode: DecodeBatch) -> float:
        n_pre = 0
        pairs = 0.0
        for n, before in prefill:
            n_pre += n
            pairs += n * (before + n / 2)
        return self.fit.step_s(decode.count, decode.context_sum, n_pre, pairs)

    def describe(
        self,
        max_batch: int | None = None,
        max_prompt: int | None = None,
        max_context: int | None = None,
    ) -> list[str]:
        """What the model assumes, in words: coefficients, range, extrapolation."""
        return describe_profile_fit(self, max_batch, max_prompt, max_context)


def describe_profile_fit(
    m: ProfileStepTime, max_batch: int | None, max_prompt: int | None, max_context: int | None
) -> list[str]:
    f = m.fit
    out = [
        *f.formula(),
        f"fitted on {len(f.residuals)} probes, worst residual {f.worst_error:+.1%}"
        if f.residuals
        else "no probes",
    ]
    spread = f.spread_line()
    if spread:
        out.append(f"  {spread}")
    if f.zeroed:
        out.append(
            "  fixed at 0 (the probes did not move them, or noise made them < 0): "
            + ", ".join(f.zeroed)
        )
    beyond = [
        (max_batch, f.max_decoders, "batches", "sequences"),
        (max_prompt, f.max_prompt_tokens, "prompts", "tokens"),
        (max_context, f.max_context_tokens, "contexts", "tokens per sequence"),
    ]
    for asked, profiled, what, unit in beyond:
        if asked is not None and asked > profiled:
            out.append(
                f"  {what} up to {asked} {unit} are beyond the profiled range ({profiled}): "
                "extrapolated along the fitted line"
                + (
                    " (forced past 2x)"
                    if what == "batches" and m.force and asked > 2 * profiled
                    else ""
                )
            )
    return out


def served_policy(profile: ProfileRecord, pc: PolicyChoice, step: StepChoice) -> Policy | None:
    """The profiled vLLM's scheduler when no --policy is named: `--policy vllm` (vLLM's V1
    scheduler, sim/policies/vllm.py) at the server's settings (its block size and KV blocks,
    its max_num_seqs and token budget), any vLLM knob given on the command line over them,
    --max-batch when it is the smaller and --chunked-prefill as the token budget. None for a
    llama-server's profile (llama.cpp's policy, from its slots: choice.py) or a named
    policy; llama.cpp's knobs (--parallel ...) are refused: a vLLM server has none."""
    v = profile.server.vllm
    if v is None or pc.name is not None:
        return None
    given = dict(step.knobs)
    named = [k.flag for k in LLAMA_KNOBS if k.attr in given]
    if named:
        raise ConfigError(
            f"{', '.join(named)} apply to {{policy}} llama.cpp only: the profile is of a "
            "vLLM server"
        )
    knobs = VllmKnobs.given((*v.knob_values(), *pc.vllm))
    if pc.max_batch < knobs.max_num_seqs:
        knobs = replace(knobs, max_num_seqs=pc.max_batch)
    if pc.chunked_prefill is not None:  # a step's prompt tokens: vLLM's token budget
        knobs = replace(knobs, max_num_batched_tokens=pc.chunked_prefill)
    return knobs.policy()


def check_identity(
    profile: ProfileRecord,
    model: str | None,
    threads: int | None,
    parallel: int | None,
    force: bool,
) -> None:
    """Refuse (unless forced) a profile of another model, thread count or slot count."""
    server = ServerIdentity(model or "", "llamacpp", threads=threads, parallel=parallel)
    check_profile_matches(profile, server, force)


def costs_of(model: ProfileStepTime, profile: ProfileRecord) -> RequestCosts:
    """The profile's per-request costs, as the simulator adds them at arrival, and its chat
    template's tokens."""
    f = model.fit
    return RequestCosts(
        request_overhead_s=f.request_overhead_s,
        request_overhead_per_token_s=f.request_per_prompt_token_s,
        chat_first_tokens=profile.chat_first_tokens or 0,
        chat_per_message_tokens=profile.chat_per_message_tokens or 0,
        chat_shared_tokens=profile.chat_shared_tokens or 0,
    )


def profiled_model(
    profile: ProfileRecord, path: str, force: bool, scale: float = 1.0
) -> tuple[ProfileStepTime, dict[str, object], RequestCosts]:
    """The profiled step-time model (every cost x `scale`), its description (summary.json)
    and request costs."""
    model = ProfileStepTime.from_profile(profile, force, scale)
    s = profile.server
    desc: dict[str, object] = {
        "step_time_model": "profiled",
        "profile": path,
        "model": s.model,
        "threads": s.threads,
        "parallel": s.parallel,
        "ctx_per_slot": s.ctx_per_slot,
        **({"engine": s.kind, "vllm": s.vllm.to_json()} if s.vllm is not None else {}),
        "profile_budget": profile.budget,
        **model.fit.coefficients(),
        "worst_residual": model.fit.worst_error,
        "speed_spread": model.fit.speed_spread,
        "step_scale": scale,
        "chat_template_tokens": [profile.chat_first_tokens, profile.chat_per_message_tokens],
        "chat_template_shared_tokens": profile.chat_shared_tokens,
        "batch_limit": model.batch_limit,
    }
    return model, desc, costs_of(model, profile)
