"""The step time of a served profile (`inferlab profile`), as the simulator's choice.

`--profile DIR` gives the step time (sim/steptime_profile.py, fitted to the profile's
probes) and the per-request serving costs the profile measured (`RequestCosts`: paid once
at arrival, outside every step). The profile names the server it measured; a simulation
of another model, thread count or `--parallel` is refused unless forced
(profile/identity.py). Without `--policy`, the profiled server's scheduler is simulated:
llama.cpp's, at the profile's slots and context per slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inferlab.sim.request import RequestCosts

if TYPE_CHECKING:
    from inferlab.profile.record import ProfileRecord
    from inferlab.sim.steptime_profile import ProfileStepTime


def check_identity(
    profile: ProfileRecord,
    model: str | None,
    threads: int | None,
    parallel: int | None,
    force: bool,
) -> None:
    """Refuse (unless forced) a profile of another model, thread count or slot count."""
    from inferlab.profile.identity import check_profile_matches
    from inferlab.profile.record import ServerIdentity

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
) -> tuple[ProfileStepTime, dict[str, Any], RequestCosts]:
    """The profiled step-time model (every cost x `scale`), its description (summary.json)
    and request costs."""
    from inferlab.sim.steptime_profile import ProfileStepTime

    model = ProfileStepTime.from_profile(profile, force, scale)
    s = profile.server
    desc: dict[str, Any] = {
        "step_time_model": "profiled",
        "profile": path,
        "model": s.model,
        "threads": s.threads,
        "parallel": s.parallel,
        "ctx_per_slot": s.ctx_per_slot,
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


def profile_knobs(profile: ProfileRecord, given: dict[str, int]) -> dict[str, int]:
    """llama.cpp's knobs for the profiled server: its slots and context unless given."""
    s = profile.server
    out = dict(given)
    if s.parallel is not None:
        out.setdefault("parallel", s.parallel)
    if s.ctx_per_slot is not None and "ctx_size" not in out:
        out["ctx_size"] = s.ctx_per_slot * out.get("parallel", s.parallel or 1)
    return out
