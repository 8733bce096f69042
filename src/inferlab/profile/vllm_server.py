"""What a vLLM server says about itself, for its profile: which engine it is, its settings,
and the counters the probes read around each request.

The engine is detected, never named by a flag: /v1/models says `owned_by: vllm`, or (behind
a proxy that renames it) its /metrics is vLLM's dialect (servermetrics/dialects.py).

Its settings (profile/record.py `VllmSettings`): the version from GET /version,
`max_model_len` from /v1/models, `block_size`, `num_gpu_blocks` and `enable_prefix_caching`
from the labels of /metrics `vllm:cache_config_info`. vLLM publishes neither
`max_num_seqs` nor `max_num_batched_tokens` (not in /metrics, /v1/models or /load; its
startup log has the budget only at debug level): they are vLLM 0.32 CPU's defaults, and
the profile says so.

Its counters (`VllmCounters`, from the same /metrics, read by prometheus_client's parser):
  steps             `vllm:iteration_tokens_total` count: engine steps that gave tokens
  step_tokens       its sum: the prompt tokens computed and the tokens sampled in them
  prefix_hits       `vllm:prefix_cache_hits_total`: prompt tokens found in the prefix cache
  prefix_queries    `vllm:prefix_cache_queries_total`: prompt tokens looked up
  preemptions       `vllm:num_preemptions_total`
  prefill_s         `vllm:request_prefill_time_seconds` sum: from a request's first
                    schedule to its first token, in the engine (its prefill steps); count:
                    requests that finished
A probe that sends one request at a time reads the difference around it: its prefill step
as the server timed it, and its cached tokens (vLLM reports them in the stream only with
--enable-prompt-tokens-details). Every probe request carries one `cache_salt` of the
profile's own (`salted`), so only its own requests' blocks are found. The server is shared
with whoever else sends it requests: a window that counted another request than the
probe's is not used (`VllmCounters.alone`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, fields, replace
from typing import Any

import aiohttp

from inferlab.bench.client import Endpoint
from inferlab.bench.server import ServerInfo
from inferlab.httpbody import MAX_JSON_BYTES, MAX_METRICS_BYTES, read_bounded
from inferlab.profile.record import VLLM_CPU_DEFAULTS, VllmSettings
from inferlab.servermetrics.dialects import detect_dialect

TIMEOUT_S = 5.0
SETTLE_S = 2.0  # how long a finished request may take to reach vLLM's histograms
_SERIES = {
    "steps": "vllm:iteration_tokens_total_count",
    "step_tokens": "vllm:iteration_tokens_total_sum",
    "prefix_hits": "vllm:prefix_cache_hits_total",
    "prefix_queries": "vllm:prefix_cache_queries_total",
    "preemptions": "vllm:num_preemptions_total",
    "prefill_s": "vllm:request_prefill_time_seconds_sum",
    "prefilled": "vllm:request_prefill_time_seconds_count",
}
CACHE_INFO = "vllm:cache_config_info"


@dataclass(frozen=True, slots=True)
class VllmCounters:
    """vLLM's counters at one scrape, or (`minus`) what they counted between two."""

    steps: float = 0.0
    step_tokens: float = 0.0
    prefix_hits: float = 0.0
    prefix_queries: float = 0.0
    preemptions: float = 0.0
    prefill_s: float = 0.0
    prefilled: float = 0.0  # requests whose prefill time was recorded (they finished)
    cache_info: dict[str, str] = field(default_factory=dict)  # cache_config_info's labels

    def minus(self, earlier: VllmCounters) -> VllmCounters:
        """What was counted since `earlier` (the cache config as now)."""
        moved = {f.name: getattr(self, f.name) - getattr(earlier, f.name) for f in _COUNTED}
        return VllmCounters(**moved, cache_info=self.cache_info)

    @property
    def alone(self) -> bool:
        """A window in which one request finished and nothing was preempted: its counts
        are that request's alone."""
        return self.prefilled == 1 and self.preemptions == 0


_COUNTED = tuple(f for f in fields(VllmCounters) if f.name != "cache_info")


def parse_counters(text: str) -> VllmCounters:
    """vLLM's /metrics text -> its counters (summed over engines); ValueError if unparsable."""
    from prometheus_client.parser import text_string_to_metric_families

    wanted = tuple(f"{n}{{" for n in (*_SERIES.values(), CACHE_INFO))
    lines = [s for s in text.splitlines() if s.startswith(wanted)]  # selection: ~60 of 1,100
    values = {k: 0.0 for k in _SERIES}
    info: dict[str, str] = {}
    by_series = {v: k for k, v in _SERIES.items()}
    for fam in text_string_to_metric_families("\n".join(lines) + "\n"):
        for s in fam.samples:
            if s.name in by_series:
                values[by_series[s.name]] += float(s.value)
            elif s.name == CACHE_INFO:
                info = dict(s.labels)
    return VllmCounters(**values, cache_info=info)


async def fetch_text(session: aiohttp.ClientSession, url: str, limit: int) -> str | None:
    """GET url's body as text; None if it does not answer 200."""
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as r:
            body = await read_bounded(r, limit)
            return body.decode("utf-8", "replace") if r.status == 200 else None
    except (TimeoutError, aiohttp.ClientError, OSError, ValueError):
        return None


async def fetch_counters(session: aiohttp.ClientSession, root_url: str) -> VllmCounters | None:
    """The server's counters now; None without a vLLM /metrics."""
    text = await fetch_text(session, f"{root_url}/metrics", MAX_METRICS_BYTES)
    if text is None or detect_dialect(text) != "vllm":
        return None
    try:
        return parse_counters(text)
    except ValueError:
        return None


async def counted_after(
    session: aiohttp.ClientSession, root_url: str, before: VllmCounters
) -> VllmCounters | None:
    """What the server counted since `before`, once the request just finished is in its
    histograms (vLLM records it as it ends: polled up to SETTLE_S)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        now = await fetch_counters(session, root_url)
        if now is None:
            return None
        delta = now.minus(before)
        if delta.prefilled >= 1 or time.monotonic() > deadline:
            return delta
        await asyncio.sleep(0.02)


def salted(ep: Endpoint) -> Endpoint:
    """`ep` with a `cache_salt` of this profile's own on every request: vLLM's prefix cache
    is always on, and unsalted it found the blocks of any earlier request of the same
    text, the probes' of a previous profile (their prompts are the same from run to run:
    a lone 384-token prompt computed 128 of them) or another client's. Within the profile
    one salt: a prefix probe's second request finds its first's blocks."""
    import json
    import secrets

    return replace(ep, extra_body_json=json.dumps({"cache_salt": f"il-{secrets.token_hex(8)}"}))


async def detect_engine(session: aiohttp.ClientSession, info: ServerInfo) -> str:
    """The engine at info: what /v1/models says, else vllm where /metrics is vLLM's."""
    if info.kind != "openai":
        return info.kind
    text = await fetch_text(session, f"{info.root_url}/metrics", MAX_METRICS_BYTES)
    return "vllm" if text is not None and detect_dialect(text) == "vllm" else info.kind


def _int(v: object) -> int | None:
    try:
        return int(str(v))
    except ValueError:
        return None


def _max_model_len(models: dict[str, Any], model: str) -> int | None:
    for m in models.get("data", []):
        if isinstance(m, dict) and m.get("id") == model:
            return _int(m.get("max_model_len"))
    return None


def settings_from(
    models: dict[str, Any], model: str, version: str | None, counters: VllmCounters | None
) -> VllmSettings:
    """The settings from /v1/models, /version and /metrics' cache config; the defaults
    where the server does not state them (named in `defaulted`)."""
    info = counters.cache_info if counters is not None else {}
    prefix = info.get("enable_prefix_caching")
    return VllmSettings(
        version=version,
        block_size=_int(info.get("block_size")),
        num_gpu_blocks=_int(info.get("num_gpu_blocks")),
        enable_prefix_caching=None if prefix is None else prefix == "True",
        max_model_len=_max_model_len(models, model),
        defaulted=tuple(VLLM_CPU_DEFAULTS),
        **VLLM_CPU_DEFAULTS,
    )


async def read_settings(
    session: aiohttp.ClientSession, info: ServerInfo, model: str
) -> VllmSettings:
    """The vLLM server's settings, as it states them (GET /version, /v1/models, /metrics)."""
    import json

    text = await fetch_text(session, f"{info.root_url}/version", MAX_JSON_BYTES)
    try:
        answer = json.loads(text) if text else None
    except ValueError:
        answer = None
    version = answer.get("version") if isinstance(answer, dict) else None
    counters = await fetch_counters(session, info.root_url)
    return settings_from(info.models_answer, model, str(version) if version else None, counters)
