"""Is this profile of this server? Model, threads and slots must agree, unless forced.

A step profiled on one model, thread count or `--parallel` says nothing reliable about
another, so using it there is refused with one line (InferlabError, exit 2), in the words
the engine baseline's refusal uses (commands/engine_model.py check_same_server). A field
the server or the profile did not state is not compared.
"""

from __future__ import annotations

from pathlib import Path

from inferlab.errors import InferlabError
from inferlab.profile.record import ProfileRecord, ServerIdentity


def _model_stem(model: str) -> str:
    """A GGUF path or a model id, compared by its file stem (llama-server names the path)."""
    return Path(model).stem.lower() if model.endswith(".gguf") else model.lower()


def identity_problems(profiled: ServerIdentity, server: ServerIdentity) -> list[str]:
    """What differs between the profiled server and this one, in words."""
    problems = []
    a, b = _model_stem(profiled.model), _model_stem(server.model)
    if a and b and a != b and a not in b and b not in a:
        problems.append(f"the server's model is {server.model}, the profile's {profiled.model}")
    if None not in (profiled.threads, server.threads) and profiled.threads != server.threads:
        problems.append(
            f"the server uses {server.threads} thread(s), the profile {profiled.threads}"
        )
    if None not in (profiled.parallel, server.parallel) and profiled.parallel != server.parallel:
        problems.append(
            f"the server has {server.parallel} slot(s), the profile {profiled.parallel}"
        )
    return problems


def check_profile_matches(profile: ProfileRecord, server: ServerIdentity, force: bool) -> None:
    """Refuse (unless force) a profile of another model, thread count or --parallel."""
    problems = identity_problems(profile.server, server)
    if problems and not force:
        p = profile.server
        raise InferlabError(
            f"profile of {Path(p.model).name} ({p.threads} threads, {p.parallel} slots): "
            f"{'; '.join(problems)}; profile this server, or add --force"
        )
