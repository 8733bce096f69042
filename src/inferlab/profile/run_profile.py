"""ProfileConfig -> run_profile -> ProfileRecord: who the server is, then every probe in order.

Order: bench's drift canary at rest (bench/canary.py: one not kept, then REST_READINGS),
one warm-up request, lone, context, mixed, prefix, each followed by rounds of the decode
and split probes (plan.decode_rounds, spread evenly) and one canary (none after the last),
REST_READINGS canaries after the probes, then the chat template; last,
llama-server's slots are released highest id first (bench/settle.py): the probes pin their
slots, and the last left 0, 2, 4, ... released last, so the next load would start from a
slot order no idle server has (every other slot: one ubatch each). A vLLM server (the
engine detected, profile/vllm_server.py) gets its own grid (no split probe, no slots to
settle), and what its /metrics counted is said after the probes (profile/vllm_checks.py).
A probe that fails raises ProbeError (one line) and nothing is returned, so nothing is
written.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import statistics
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from inferlab.bench.autofloor import fetch_props, props_url
from inferlab.bench.canary import (
    REST_READINGS,
    CanaryLog,
    after_level,
    block_of,
    canary_endpoint,
    start_canary,
    take,
)
from inferlab.bench.client import Endpoint, make_connector
from inferlab.bench.server import ServerInfo, pick_model, probe_server
from inferlab.bench.settle import settle_slots
from inferlab.errors import InferlabError
from inferlab.metrics.speed_shift import readings_ms, spread_of
from inferlab.profile import mixed as mixed_probe
from inferlab.profile import probes, vllm_checks
from inferlab.profile.probe_plan import SHORT_PROMPT, ProbePlan, make_plan, make_vllm_plan
from inferlab.profile.record import (
    SCHEMA_VERSION,
    Observation,
    Probe,
    ProfileRecord,
    ServerIdentity,
)
from inferlab.profile.serverstep import StepSampler
from inferlab.profile.template import chat_template
from inferlab.profile.vllm_server import detect_engine, fetch_counters, read_settings, salted
from inferlab.summary import Canary

DEFAULT_SLOTS = 1  # a server that does not say how many slots it has: probe one at a time
DEFAULT_CTX = 1024
VLLM_BLOCK = 16  # vLLM's block size where its /metrics does not state it (its GPU default)
PROBE_GROUPS = ("lone", "context", "mixed", "prefix")  # in order, each its decode rounds after


@dataclass(frozen=True, slots=True)
class ProfileConfig:
    url: str  # the OpenAI base (…/v1)
    budget: int = 1
    threads: int | None = None  # stated: llama-server's /props does not say
    model: str | None = None
    api_key: str | None = None
    progress: Callable[[str], None] | None = None  # one line per probe point


def identity_from(
    info: ServerInfo, model: str, props: dict[str, Any] | None, threads: int | None
) -> ServerIdentity:
    """The server's identity from /v1/models and llama-server's /props."""
    p = props or {}
    settings = p.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    slots = p.get("total_slots")
    build = p.get("build_info")
    said = p.get("n_threads")
    return ServerIdentity(
        model=str(p.get("model_path") or model),
        kind=info.kind,
        threads=int(said) if isinstance(said, int) else threads,
        parallel=int(slots) if isinstance(slots, int) else None,
        ctx_per_slot=int(n_ctx) if isinstance(n_ctx, int) else None,
        build=str(build) if build else None,
    )


@dataclass(slots=True)
class _Probing:
    """The probes of one profile, in order, and the observations they noted."""

    c: probes.Client
    plan: ProbePlan
    say: Callable[[str], None]
    out: list[Observation] = field(default_factory=list)
    runs: dict[tuple[Probe, int], list[probes.StreamsRun]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        paired: list[tuple[Probe, int]] = [("decode", b) for b in self.plan.decode_batches]
        paired += [("split", b) for b in self.plan.split_batches]
        self.runs = {k: [] for k in paired}

    def note(self, o: Observation) -> None:
        self.say(
            f"{o.probe:8} D={o.decoders:<3} P={o.prompt_tokens:<5} K={o.cached_tokens:<4} "
            f"U={o.ubatch_count} "
            f"median {o.median_s * 1e3:8.2f} ms  "
            f"(p25 {o.p25_s * 1e3:.2f}, p75 {o.p75_s * 1e3:.2f}, n={o.n})"
        )
        self.out.append(o)

    async def decode_round(self) -> None:
        """Every decode and split batch once, in turn: a drift in speed moves both."""
        for probe, b in self.runs:
            one = await probes.streams_once(self.c, probe, b, SHORT_PROMPT, self.plan.decode_output)
            self.runs[(probe, b)].append(one)

    def counted(self) -> None:
        """What vLLM's /metrics counted for the TTFT probe just noted (nothing elsewhere)."""
        if self.c.windows:
            self.say(vllm_checks.window_line(self.c.windows))
            self.c.windows.clear()

    async def lone(self) -> None:
        await probes.lone(self.c, SHORT_PROMPT, 1)  # warm-up, not kept
        self.c.windows.clear()
        for p in self.plan.lone_prompts:
            self.note(await probes.lone(self.c, p, self.plan.repeats))
            self.counted()

    async def context(self) -> None:
        plan = self.plan
        for b in plan.context_batches:
            o = await probes.streams(
                self.c, "context", b, plan.context_prompt, plan.context_output, 1
            )
            self.note(o)

    async def mixed(self) -> None:
        for d in self.plan.mixed_decoders:
            for o in await mixed_probe.mixed(self.c, d, self.plan.mixed_prompts, self.plan.repeats):
                self.note(o)

    async def prefix(self) -> None:
        for k in self.plan.prefix_cached:
            self.note(await probes.prefix(self.c, self.plan.prefix_prompt, k, self.plan.repeats))
            self.counted()


def spread_rounds(total: int, group: int, groups: int) -> int:
    """How many of `total` decode rounds run after probe group `group` of `groups`: as
    evenly as they go, so the decode step is the machine's over the whole profile, not
    over one ~20 s stretch (its speed moved +-15 % over 10-30 s on these VMs)."""
    return total * (group + 1) // groups - total * group // groups


async def _probe_all(
    c: probes.Client, plan: ProbePlan, say: Callable[[str], None], canary: CanaryLog | None
) -> list[Observation]:
    p = _Probing(c, plan, say)
    groups = (p.lone, p.context, p.mixed, p.prefix)
    for i, group in enumerate(groups):
        await group()
        for _ in range(spread_rounds(plan.decode_rounds, i, len(groups))):
            await p.decode_round()
        if i + 1 < len(groups):  # one between groups: the machine's speed through the probes
            await after_level(canary, c.session, c.t0_ns, i)
    for (probe, b), rs in p.runs.items():
        p.note(probes.streams_observation(probe, b, rs))
    return p.out


async def identify(
    session: aiohttp.ClientSession, info: ServerInfo, model: str, cfg: ProfileConfig
) -> ServerIdentity:
    """Who the server is: its engine detected (vllm_server.detect_engine), then llama-server's
    /props or vLLM's stated settings."""
    engine = await detect_engine(session, info)
    if engine == "vllm":
        settings = await read_settings(session, info, model)
        return ServerIdentity(model, "vllm", cfg.threads, build=settings.version, vllm=settings)
    headers = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
    props = await asyncio.to_thread(fetch_props, props_url(cfg.url), headers, 10.0)
    return identity_from(info, model, props, cfg.threads)


@contextlib.asynccontextmanager
async def connected(cfg: ProfileConfig) -> AsyncIterator[tuple[probes.Client, ServerIdentity]]:
    """A probe client on the server at cfg.url, and the server's identity."""
    headers = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
    async with aiohttp.ClientSession(connector=make_connector(64, keepalive=False)) as session:
        info = await probe_server(session, cfg.url, headers)
        model = pick_model(info, cfg.model)
        ident = await identify(session, info, model, cfg)
        ep = Endpoint(
            info.base_url,
            model,
            api_key=cfg.api_key,
            server_kind=ident.kind,
            request_timeout_s=probes.PROBE_TIMEOUT_S,
        )
        sampler = StepSampler(session, f"{info.root_url}/metrics")
        vllm = ident.vllm is not None
        ep = salted(ep) if vllm else ep
        t0 = time.perf_counter_ns()
        yield (
            probes.Client(session, ep, info.root_url, t0, sampler, slots=not vllm, counted=vllm),
            ident,
        )


async def _settled(c: probes.Client, slots: int) -> str:
    """The slots settled (bench/settle.py), in one line; a failure only says so: every
    probe is done, and the next load can settle them itself (bench --settle-slots)."""
    try:
        await settle_slots(c.session, c.endpoint, slots, c.t0_ns)
    except InferlabError as e:
        return f"settled  not: {e}"
    return f"settled  {slots} slots released highest id first, as on an idle server"


def plan_for(ident: ServerIdentity, budget: int) -> ProbePlan:
    """The probe grid for this server: llama-server's slots, or vLLM's settings."""
    v = ident.vllm
    if v is not None:
        ctx = v.max_model_len or DEFAULT_CTX
        block = v.block_size or VLLM_BLOCK
        return make_vllm_plan(budget, v.max_num_seqs, ctx, block, v.max_num_batched_tokens)
    return make_plan(budget, ident.parallel or DEFAULT_SLOTS, ident.ctx_per_slot or DEFAULT_CTX)


async def start_canary_at_rest(c: probes.Client, say: Callable[[str], None]) -> CanaryLog | None:
    """bench's drift canary, REST_READINGS at rest before the probes, after one not kept
    (a freshly started server's first request); None when all of them failed. Sent as
    bench sends it: llama-server's slot pinned, vLLM's without the profile's cache salt."""
    ep = dataclasses.replace(c.endpoint, extra_body_json="")
    await take(CanaryLog(canary_endpoint(ep)), c.session, c.t0_ns, -1)  # warm-up, not kept
    log, failed = await start_canary(c.session, ep, c.t0_ns)
    if failed is not None:
        say(f"canary   {failed.message}")
        return None
    say(
        f"canary   TPOT {log.rest_median_ms() or 0.0:.2f} ms at rest before the probes "
        f"({len(log.rest_ms())} readings, spread {_pct(log.rest_spread())})"
    )
    return log


async def end_canary(
    c: probes.Client, log: CanaryLog | None, say: Callable[[str], None]
) -> Canary | None:
    """REST_READINGS more after the probes; the profile's canary record, said in a line."""
    if log is None:
        return None
    for _ in range(REST_READINGS):
        await after_level(log, c.session, c.t0_ns, len(PROBE_GROUPS) - 1)
    block = block_of(log, [(g, None) for g in PROBE_GROUPS])
    ms = readings_ms(block)
    say(
        f"canary   TPOT {statistics.median(ms):.2f} ms over the profile ({len(ms)} readings: "
        f"at rest, between the probe groups, after them; spread {_pct(spread_of(ms))})"
    )
    return block


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


async def _run(cfg: ProfileConfig) -> ProfileRecord:
    t_start = time.perf_counter()
    async with connected(cfg) as (c, ident):
        plan = plan_for(ident, cfg.budget)
        say = cfg.progress or (lambda _: None)
        log = await start_canary_at_rest(c, say)
        before = await fetch_counters(c.session, c.root_url) if c.counted else None
        obs = await _probe_all(c, plan, say, log)
        canary = await end_canary(c, log, say)
        template = await chat_template(c)
        say(
            "template no chat API: nothing measured"
            if template is None
            else f"template +{template.first} tokens on a chat's first message "
            f"({template.shared if template.shared is not None else '?'} alike in every "
            f"chat), +{template.per_message} per earlier message"
        )
        if ident.kind == "llamacpp" and ident.parallel:
            say(await _settled(c, ident.parallel))
        if before is not None:
            after = await fetch_counters(c.session, c.root_url)
            for line in vllm_checks.profile_lines(obs, before, after):
                say(line)
    return ProfileRecord(
        schema_version=SCHEMA_VERSION,
        created_unix_s=time.time(),
        url=c.endpoint.base_url,
        server=ident,
        budget=cfg.budget,
        wall_s=time.perf_counter() - t_start,
        observations=tuple(obs),
        chat_first_tokens=template.first if template else None,
        chat_per_message_tokens=template.per_message if template else None,
        chat_shared_tokens=template.shared if template else None,
        canary=canary,
    )


def run_profile(cfg: ProfileConfig) -> ProfileRecord:
    """Every probe against the server at cfg.url; ProbeError / ServerError on failure."""
    return asyncio.run(_run(cfg))
