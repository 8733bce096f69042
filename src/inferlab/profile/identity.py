"""Is this profile of this server? Model, threads and slots must agree, unless forced;
for vLLM, its settings that both the profile and the server state (block_size,
num_gpu_blocks, ...: record.VLLM_COMPARED).

A step profiled on one model, thread count or `--parallel` says nothing reliable about
another, so using it there is refused with one line (InferlabError, exit 2), in the words
the engine baseline's refusal uses: both are profile/sameserver.py.
"""

from __future__ import annotations

from pathlib import Path

from inferlab.profile.record import VLLM_COMPARED, ProfileRecord, ServerIdentity, VllmSettings
from inferlab.profile.sameserver import count_problems, refuse_mismatch, same_model


def vllm_problems(profiled: VllmSettings | None, server: VllmSettings | None) -> list[str]:
    """The vLLM settings that differ, among those both sides stated (a default is not
    compared: vLLM does not publish max_num_seqs or max_num_batched_tokens)."""
    if profiled is None or server is None:
        return []
    problems = []
    for name in VLLM_COMPARED:
        theirs, ours = server.stated(name), profiled.stated(name)
        if None not in (theirs, ours) and theirs != ours:
            problems.append(f"the server's {name} is {theirs}, the profile's {ours}")
    return problems


def identity_problems(profiled: ServerIdentity, server: ServerIdentity) -> list[str]:
    """What differs between the profiled server and this one, in words."""
    problems = []
    if not same_model(profiled.model, server.model):
        problems.append(f"the server's model is {server.model}, the profile's {profiled.model}")
    counts = (server.threads, server.parallel), (profiled.threads, profiled.parallel)
    return problems + count_problems("profile", *counts) + vllm_problems(profiled.vllm, server.vllm)


def check_profile_matches(profile: ProfileRecord, server: ServerIdentity, force: bool) -> None:
    """Refuse (unless force) a profile of another model, thread count or --parallel, or of
    a vLLM whose stated settings differ."""
    p = profile.server
    v = p.vllm
    what = f"profile of {Path(p.model).name} " + (
        f"(vLLM, block_size {v.block_size}, {v.num_gpu_blocks} KV blocks)"
        if v is not None
        else f"({p.threads} threads, {p.parallel} slots)"
    )
    refuse_mismatch(what, identity_problems(p, server), "profile this server", force)
