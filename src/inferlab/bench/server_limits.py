"""What the server can take of a workload, asked before the first level is sent.

- Its context: llama.cpp's /props (`default_generation_settings.n_ctx`, per slot) or
  vLLM's `max_model_len` in /v1/models. A request longer than it is refused up front,
  naming the request (or the trace row) and what would fit.
- A chat template, for conversations (`--turns`): one tiny chat request; a server
  that cannot apply a template answers it with an error, and the run stops there.
Bodies are read up to a bound: a server answering megabytes here is not one to trust.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from inferlab.bench.client import Endpoint
from inferlab.bench.server import ServerInfo
from inferlab.errors import InferlabError

MAX_BODY_BYTES = 1 << 20
TIMEOUT = aiohttp.ClientTimeout(total=15)


async def _get_json(session: aiohttp.ClientSession, url: str) -> Any:
    try:
        async with session.get(url, timeout=TIMEOUT) as r:
            if r.status != 200:
                return None
            return json.loads(await r.content.read(MAX_BODY_BYTES))
    except (TimeoutError, aiohttp.ClientError, ValueError, OSError):
        return None


async def context_tokens(
    session: aiohttp.ClientSession, info: ServerInfo, model: str
) -> tuple[int, str] | None:
    """(tokens, where the figure came from), or None when the server does not say."""
    for m in info.models_answer.get("data", []) or []:
        if isinstance(m, dict) and m.get("id") == model and isinstance(m.get("max_model_len"), int):
            return int(m["max_model_len"]), "the server's max_model_len"
    if info.kind != "llamacpp":
        return None
    props = await _get_json(session, f"{info.root_url}/props")
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return (int(n_ctx), "the server's n_ctx per slot") if isinstance(n_ctx, int) else None


async def check_chat(session: aiohttp.ClientSession, endpoint: Endpoint) -> None:
    """--turns speaks the chat API: refuse a server that cannot apply a chat template."""
    url = f"{endpoint.base_url.rstrip('/')}/chat/completions"
    body = {
        "model": endpoint.model,
        "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 1,
    }
    try:
        async with session.post(url, json=body, headers=endpoint.headers(), timeout=TIMEOUT) as r:
            status = r.status
            text = (await r.content.read(4096)).decode("utf-8", "replace")
    except (TimeoutError, aiohttp.ClientError, OSError) as e:
        raise InferlabError(f"--turns: POST {url} failed ({type(e).__name__}: {e})") from e
    if status != 200:
        raise InferlabError(
            f"--turns needs the chat API with a chat template: POST {url} answered HTTP "
            f"{status} {text[:160].strip()!r}; serve the model with a chat template "
            "(llama-server --jinja, vLLM --chat-template) or drop --turns"
        )
