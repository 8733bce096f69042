"""What is at the URL: reachable? an OpenAI API? which models, which engine?"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp

from inferlab.address import root_of
from inferlab.errors import ServerError
from inferlab.httpbody import MAX_JSON_BYTES, QUERY_DEADLINE_S, AnswerTooSlow, read_bounded


@dataclass(frozen=True, slots=True)
class ServerInfo:
    base_url: str
    root_url: str  # without /v1: where /tokenize, /health and /metrics live
    model_ids: tuple[str, ...]
    kind: str  # "llamacpp", "vllm", "sglang" or "openai"
    models_answer: dict[str, Any]


async def probe_server(
    session: aiohttp.ClientSession,
    base_url: str,
    headers: dict[str, str],
    deadline_s: float = QUERY_DEADLINE_S,
) -> ServerInfo:
    """GET /v1/models, the whole answer within deadline_s: what is at the URL, or one
    ServerError that says what to fix."""
    url = f"{base_url.rstrip('/')}/models"
    timeout = aiohttp.ClientTimeout(total=deadline_s)
    try:
        async with session.get(url, headers=headers, timeout=timeout) as r:
            text = (await read_bounded(r, MAX_JSON_BYTES)).decode("utf-8", "replace")
            status = r.status
    except TimeoutError as e:
        raise AnswerTooSlow(url, deadline_s) from e
    except (aiohttp.ClientError, OSError) as e:
        raise ServerError(
            f"cannot reach {base_url} ({type(e).__name__}: {e}); is the server running, "
            "and is the URL its OpenAI base (e.g. http://127.0.0.1:8080/v1)?"
        ) from e
    if status in (401, 403):
        raise ServerError(f"{url} refused the API key (HTTP {status}); set it in $OPENAI_API_KEY")
    try:
        import json

        answer = json.loads(text) if status == 200 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
        raise ServerError(
            f"{base_url} is not an OpenAI-compatible API: GET {url} answered HTTP {status} "
            f"{text[:120]!r}; point --url at the server's /v1 base"
        )
    ids = tuple(str(m.get("id")) for m in answer["data"] if isinstance(m, dict))
    owners = {str(m.get("owned_by", "")).lower() for m in answer["data"] if isinstance(m, dict)}
    kind = next((k for k in ("llamacpp", "vllm", "sglang") if k in owners), "openai")
    return ServerInfo(base_url.rstrip("/"), root_of(base_url), ids, kind, answer)


def pick_model(info: ServerInfo, requested: str | None) -> str:
    if requested is None:
        if not info.model_ids:
            raise ServerError(f"{info.base_url} serves no models")
        return info.model_ids[0]
    if requested in info.model_ids:
        return requested
    aliases = {
        a
        for m in info.models_answer.get("data", [])
        if isinstance(m, dict)
        for a in m.get("aliases", []) or []
    }
    if requested in aliases:
        return requested
    raise ServerError(
        f"model {requested!r} is not served at {info.base_url}; it serves: "
        + ", ".join(info.model_ids)
    )
