"""Is this profile of this server? Model, threads and slots must agree, unless forced.

A step profiled on one model, thread count or `--parallel` says nothing reliable about
another, so using it there is refused with one line (InferlabError, exit 2), in the words
the engine baseline's refusal uses: both are profile/sameserver.py.
"""

from __future__ import annotations

from pathlib import Path

from inferlab.profile.record import ProfileRecord, ServerIdentity
from inferlab.profile.sameserver import count_problems, refuse_mismatch, same_model


def identity_problems(profiled: ServerIdentity, server: ServerIdentity) -> list[str]:
    """What differs between the profiled server and this one, in words."""
    problems = []
    if not same_model(profiled.model, server.model):
        problems.append(f"the server's model is {server.model}, the profile's {profiled.model}")
    counts = (server.threads, server.parallel), (profiled.threads, profiled.parallel)
    return problems + count_problems("profile", *counts)


def check_profile_matches(profile: ProfileRecord, server: ServerIdentity, force: bool) -> None:
    """Refuse (unless force) a profile of another model, thread count or --parallel."""
    p = profile.server
    what = f"profile of {Path(p.model).name} ({p.threads} threads, {p.parallel} slots)"
    refuse_mismatch(what, identity_problems(p, server), "profile this server", force)
