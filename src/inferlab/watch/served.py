"""Which model a server is running, from its /v1/models, when that names a readable local file.

llama-server reports the GGUF path it loaded (see fixtures/llama-server-b11434/
v1-models.json); vLLM reports the folder or hub name it was given. A path that
exists here is a spec inferlab can read; a hub name is not (say --model).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inferlab.address import checked_root
from inferlab.errors import InferlabError
from inferlab.httpbody import MAX_JSON_BYTES, AnswerTooSlow, Unreachable, get_sync


class ServerNotUp(InferlabError):
    """The server did not answer (yet): refused, timed out or 5xx; watch waits for it."""


def server_base(url: str) -> str:
    """The server's root from what the user gave (with or without /v1 or /metrics)."""
    return checked_root(url, "--url", scheme_optional=True)


def model_names(models_json: dict[str, Any]) -> list[str]:
    """Every id/model/name listed, in order (OpenAI `data`, then Ollama-style `models`)."""
    names: list[str] = []
    for item in models_json.get("data") or []:
        names += [item.get("id"), item.get("root")]
    for item in models_json.get("models") or []:
        names += [item.get("model"), item.get("name")]
    return [n for n in dict.fromkeys(names) if isinstance(n, str) and n]


def readable_spec(names: list[str]) -> str | None:
    """The first name that is a local .gguf file, or a folder with a config.json."""
    for n in names:
        p = Path(n).expanduser()
        if p.is_file() and p.suffix == ".gguf":
            return str(p)
        if p.is_dir() and (p / "config.json").is_file():
            return str(p)
    return None


def served_model(url: str, timeout_s: float = 5.0) -> str:
    """The local model spec the server names, or one clear error saying what to pass instead."""
    listing = f"{server_base(url)}/v1/models"
    try:
        answer = get_sync(listing, {}, MAX_JSON_BYTES, timeout_s)
        data = json.loads(answer.body) if answer.status == 200 else None
    except ValueError as e:
        raise InferlabError(
            f"no model given and {listing} did not list one ({e}); pass --model or --gguf"
        ) from e
    except (Unreachable, AnswerTooSlow) as e:  # refused, stuck: watch waits for it
        raise ServerNotUp(f"{listing} did not answer ({e}); no --model given") from e
    if answer.status >= 500:  # 503 while loading: watch waits for it (--model needs no wait)
        raise ServerNotUp(f"{listing} did not answer (HTTP {answer.status}); no --model given")
    if answer.status != 200:
        raise InferlabError(
            f"no model given and {listing} did not list one (HTTP {answer.status}); "
            "pass --model or --gguf"
        )
    names = model_names(data if isinstance(data, dict) else {})
    spec = readable_spec(names)
    if spec is None:
        shown = ", ".join(names[:3]) or "nothing"
        raise InferlabError(
            f"no model given and {listing} names {shown}, not a readable local .gguf or "
            "model folder; pass --model or --gguf"
        )
    return spec
