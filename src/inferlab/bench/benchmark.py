"""A whole sweep: check the server, make prompts, run each level, write records and summary.

Records are appended as each request completes; summary.json is rewritten
after every level, so Ctrl-C or a crash keeps everything that finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import platform
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from inferlab import __version__
from inferlab.bench.blocks import PairedOptions
from inferlab.bench.canary import CanaryLog, after_level, canary_block, drift_warning, start_canary
from inferlab.bench.client import Endpoint, default_request_timeout_s, make_connector
from inferlab.bench.clock import ClockOffset, ClockReport
from inferlab.bench.fleet import (
    Fleet,
    WorkerOptions,
    clock_warnings,
    fleet_client_stats,
    worker_levels,
)
from inferlab.bench.hoststat import CpuTicks, host_level, no_steal_note, read_cpu_ticks
from inferlab.bench.lag import lag_p99_s
from inferlab.bench.loadstats import allow_prefix_hits, counters_hit_ratio, load_block
from inferlab.bench.materialise import Target, make_level_prompts
from inferlab.bench.preflight import Asked, preflight
from inferlab.bench.progress import Hooks
from inferlab.bench.prompt_text import LocalCounter, Prompt, TextSource
from inferlab.bench.runner import LevelContext, LevelRun, run_level
from inferlab.bench.runner import event_loop_runner as event_loop_runner  # callers import it here
from inferlab.bench.server import ServerInfo, pick_model, probe_server
from inferlab.bench.settle import carried_state, settle_slots
from inferlab.bench.slo_level import record_probe, search_levels
from inferlab.bench.sse import DEFAULT_MAX_EVENT_BYTES
from inferlab.engines.result import EngineBench
from inferlab.errors import InferlabError
from inferlab.httpbody import query_deadline_s
from inferlab.jsonio import write_json
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.metrics.checks import check_level, warning
from inferlab.metrics.compare import compare_level
from inferlab.metrics.decomposition import apply_engine_baseline
from inferlab.metrics.level_summary import summarize_level
from inferlab.physics.decode import decode_point
from inferlab.physics.floor import Floor, floor_block
from inferlab.records import RecordWriter
from inferlab.slo.grammar import Slo
from inferlab.slo.search import MaxLoadSearch
from inferlab.summary import (
    SCHEMA_VERSION,
    ClientStats,
    LevelSummary,
    RunSummary,
    RunWarning,
    ServerBlock,
    Uncertainty,
)
from inferlab.summary import Workload as WorkloadBlock


@dataclass(slots=True)
class BenchConfig:
    url: str
    model: str | None
    # The one load description (load/): levels, lengths, arrivals, traces, prefixes,
    # warm-up and seed; `Workload.fixed(...)` states a load of fixed lengths.
    load: Workload
    api: str = "completions"
    api_key: str | None = field(default=None, repr=False)
    force_length: bool = True
    stall_factor: float = 5.0
    lag_threshold_s: float = 0.005
    # Open connections at most (default: the highest concurrency, at least 64, plus a margin).
    # In rate mode a request beyond it waits in the client, recorded as queue delay.
    max_connections: int | None = None
    # Per-request deadline (None: derived from the workload, see default_request_timeout_s).
    request_timeout_s: float | None = None
    out_dir: Path = Path("results/run")
    floor: Floor | None = None
    command: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the demo's server/probe facts
    scrape: bool = True  # read the server's /metrics beside each level when it answers
    metrics_url: str | None = None  # default: <server root>/metrics
    workers: WorkerOptions = field(default_factory=WorkerOptions)  # in-process by default
    engine: EngineBench | None = None  # engine alone (engine-bench): per-level floor/engine/served
    slo: Slo | None = None  # --slo: an `slo` block per level (bench/slo_level.py)
    search: MaxLoadSearch | None = None  # --find-max-load: it picks the levels instead
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES  # a longer SSE event fails its request
    floor_note: str | None = None  # how bench found the floor itself, or which flag gives MBU
    # A level whose every measured request failed ends the sweep there (bench --keep-going:
    # go on to the next level anyway).
    keep_going: bool = False
    # Before each level and repeat, llama-server's slots released highest id first, as an
    # idle server fills them (bench/settle.py), so no level inherits the one before's.
    # None: wherever the server is llama-server stating its slots; True: insist (refused
    # elsewhere, --settle-slots); False: never (--no-settle-slots).
    settle_slots: bool | None = None
    prompt_corpus: tuple[str, ...] = field(default=(), repr=False)  # --prompts FILE's words
    tokenizer: LocalCounter | None = None  # --tokenizer FILE: counts where /tokenize is missing
    extra_body_json: str = ""  # --extra-body: merged into every request body
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # --header K:V
    # --repeat N: every level runs N times, interleaved (c=1, c=2, c=1, c=2, ...), each
    # repeat with fresh prompts; summary.json keeps each repeat and their intervals.
    repeats: int = 1
    # The drift canary (bench/canary.py): one fixed short request at rest at the start and
    # after every level, its TPOT the machine's speed; machine_drift where it moved.
    canary: bool = True
    # bench --url A --url B: the endpoints, measured in alternating blocks (bench/paired.py
    # runs them; `url` is then the first's). None: one server, as always.
    paired: PairedOptions | None = None

    @property
    def levels(self) -> list[Level]:
        return list(self.load.levels)

    @property
    def prompt_tokens(self) -> int:
        """The mean prompt length: the floor is compared at the mean lengths."""
        return self.load.mean_tokens()[0]

    @property
    def output_tokens(self) -> int:
        return self.load.mean_tokens()[1]

    @property
    def requests_per_level(self) -> int:
        return self.load.requests_per_level or 0

    @property
    def warmup(self) -> int | None:
        """Per level; None: one request per stream."""
        return self.load.warmup

    @property
    def seed(self) -> int:
        return self.load.seed


@dataclass(slots=True)
class BenchResult:
    summary: RunSummary
    runs: list[LevelRun]
    summary_path: Path
    records_path: Path


def _client_stats(run: LevelRun) -> ClientStats:
    return ClientStats(
        cpu_s=run.client_cpu_s,
        wall_s=run.wall_s,
        cpu_fraction=run.client_cpu_s / run.wall_s if run.wall_s else 0.0,
        loop_lag_p99_s=lag_p99_s(run.loop_lag_s),
        loop_lag_max_s=max(run.loop_lag_s, default=0.0),
    )


def merged_run(runs: list[LevelRun]) -> LevelRun:
    """One level's repeats as one run: every record, the CPU and wall time added; the
    server's books and the workers are the last repeat's."""
    last = runs[-1]
    return LevelRun(
        last.level,
        records=[r for run in runs for r in run.records],
        wall_s=sum(run.wall_s for run in runs),
        client_cpu_s=sum(run.client_cpu_s for run in runs),
        loop_lag_s=[x for run in runs for x in run.loop_lag_s],
        interrupted=any(run.interrupted for run in runs),
        server_samples=last.server_samples,
        workers=last.workers,
        implied_hit_ratio=last.implied_hit_ratio,
        repeat=last.repeat,
        host_ticks=_summed([run.host_ticks for run in runs]),
    )


def _summed(ticks: list[CpuTicks | None]) -> CpuTicks | None:
    """The repeats' CPU ticks together; None unless every repeat has them."""
    if not ticks or any(t is None for t in ticks):
        return None
    return sum((t for t in ticks if t is not None), CpuTicks(0, 0))


# A level's intervals by (label, records per repeat): the summary is rebuilt after every
# level, and a level that did not change keeps the bootstrap it had (seconds for 10^4 requests).
IntervalCache = dict[tuple[str, tuple[int, ...]], Uncertainty | None]


def _summarised(
    cfg: BenchConfig, runs: list[LevelRun], cache: IntervalCache
) -> tuple[LevelSummary, LevelRun]:
    """The level's statistics over every repeat's requests, each repeat's own (--repeat)
    and the intervals; and the run (the repeats merged) the rest of the block reads."""
    from inferlab.metrics.repeats import level_uncertainty, pooled

    run = runs[0] if len(runs) == 1 else merged_run(runs)
    lv, k = run.level, cfg.stall_factor
    s = summarize_level(lv.label, lv.summary_kind, lv.value, run.records, k)
    groups = [r.records for r in runs]
    parts = [s]
    if len(runs) > 1:
        parts = [summarize_level(lv.label, lv.summary_kind, lv.value, g, k) for g in groups]
        s = pooled(s, parts)
    key = (lv.label, tuple(len(g) for g in groups))
    if key not in cache:
        cache[key] = level_uncertainty(groups, s, parts)
    return dataclasses.replace(s, uncertainty=cache[key]), run


def _level_block(
    cfg: BenchConfig,
    runs: list[LevelRun],
    offsets: list[ClockOffset] | None = None,
    t0_ns: int = 0,
    cache: IntervalCache | None = None,
) -> tuple[LevelSummary, list[RunWarning]]:
    s, run = _summarised(cfg, runs, {} if cache is None else cache)
    lv = run.level
    s, load_warns = load_block(s, run.records, cfg.load.shares_prefix, run.implied_hit_ratio)
    client = fleet_client_stats(run) if run.workers else _client_stats(run)
    s = dataclasses.replace(
        s, client=client, interrupted=run.interrupted, host=host_level(run.host_ticks)
    )
    if run.workers and offsets:
        s = dataclasses.replace(s, workers=worker_levels(run, offsets))
    ceiling = None
    if cfg.floor is not None:
        fl = cfg.floor
        comparison = compare_level(s, fl.cost, fl.hardware, cfg.prompt_tokens, cfg.output_tokens)
        s = dataclasses.replace(s, comparison=comparison)
        ceiling = decode_point(fl.cost, fl.hardware, 1, cfg.prompt_tokens).tokens_per_s_per_user
    template = int(cfg.extra.get("prompt_template_tokens", 0))
    warns = check_level(s, run.records, template, ceiling, client, cfg.lag_threshold_s, True)
    warns = allow_prefix_hits(warns, cfg.load.shares_prefix) + load_warns
    if run.server_samples is not None:  # the server's own books (servermetrics/)
        from inferlab.metrics.server_checks import attach_server

        target = int(lv.value) if lv.kind == "concurrency" else None
        workload = (cfg.prompt_tokens, cfg.output_tokens)
        s, more = attach_server(s, run.server_samples, target, cfg.floor, workload)
        warns += allow_prefix_hits(more, cfg.load.shares_prefix)
        s = counters_hit_ratio(s, cfg.load.shares_prefix)
    from inferlab.bench.slo_level import judge_saturation, judge_slo, reasoning_blocks

    sat = judge_saturation(lv, run.records, run.server_samples, t0_ns * 1e-9)
    s = dataclasses.replace(s, slo=judge_slo(cfg.slo, run.records), saturation=sat)
    s = reasoning_blocks(s, run.records)
    return s, warns


@dataclass(slots=True)
class RunState:
    """What a sweep knows so far; the summary is rebuilt from it after every level."""

    cfg: BenchConfig
    started_at_unix_s: float
    t0_ns: int
    info: ServerInfo | None = None
    model: str = ""
    runs: list[LevelRun] = field(default_factory=list)
    warnings: list[RunWarning] = field(default_factory=list)
    interrupted: bool = False
    sampler: Any = None  # servermetrics.sampler.MetricsSampler while /metrics answers
    fleet: Fleet | None = None  # bench --workers / --ray
    clocks: list[ClockReport] = field(default_factory=list)  # each worker's, at the end
    settle_slot_count: int = 0  # the server's slots, released before each level (0: none)
    intervals: IntervalCache = field(default_factory=dict)  # each level's, while it stands
    canary: CanaryLog | None = None  # the drift canary's readings (bench/canary.py)
    count_at: str | None = None  # where /tokenize counts prompts (None: not asked)


def _workload(cfg: BenchConfig, settled: bool) -> WorkloadBlock:
    return WorkloadBlock(
        prompt_tokens=cfg.prompt_tokens,
        output_tokens=cfg.output_tokens,
        requests_per_level=cfg.requests_per_level,
        rest={
            "api": cfg.api,
            "warmup_per_level": cfg.warmup,
            "force_length": cfg.force_length,
            "settle_slots": settled,
            "extra_body": json.loads(cfg.extra_body_json) if cfg.extra_body_json else None,
            "headers": sorted(k for k, _ in cfg.headers) or None,  # names only: values may be keys
            "stall_factor": cfg.stall_factor,
            "seed": cfg.seed,
            "request_timeout_s": request_timeout_s(cfg),
            "load": cfg.load.to_json(),
        },
    )


def repeats_of(runs: list[LevelRun]) -> list[list[LevelRun]]:
    """The runs grouped by level (its repeats, in order), levels in the order first run. A
    level listed twice (the same label, the same repeat) is two levels, not two repeats."""
    groups: list[list[LevelRun]] = []
    for run in runs:
        home = next(
            (
                g
                for g in groups
                if g[0].level.label == run.level.label and all(r.repeat != run.repeat for r in g)
            ),
            None,
        )
        if home is None:
            groups.append([run])
        else:
            home.append(run)
    return groups


def build_summary(state: RunState) -> RunSummary:
    cfg, info = state.cfg, state.info
    levels, warns = [], list(state.warnings)
    for runs in repeats_of(state.runs):
        offsets = state.fleet.offsets if state.fleet else None
        s, w = _level_block(cfg, runs, offsets, state.t0_ns, state.intervals)
        levels.append(s)
        warns.extend(w)
        if (drift := drift_warning(state.canary, runs, state.runs)) is not None:
            warns.append(drift)
    if info is not None:  # what else carries state between levels (bench/settle.py)
        dialect = next((lv.server.dialect for lv in levels if lv.server), None)
        warns.append(carried_state(info.kind, dialect, state.settle_slot_count, cfg.settle_slots))
    summary = RunSummary(
        schema_version=SCHEMA_VERSION,
        tool=f"inferlab {__version__}",
        command=tuple(cfg.command),
        started_at_unix_s=state.started_at_unix_s,
        clock=_clock_block(state),
        interrupted=state.interrupted,
        server=ServerBlock(
            url=cfg.url,
            kind=info.kind if info else None,
            model=state.model,
            models_answer=info.models_answer if info else None,
        ),
        workload=_workload(cfg, state.settle_slot_count > 0),
        floor=floor_block(f) if (f := cfg.floor) else None,
        client_host={
            "python": sys.version.split()[0],
            "aiohttp": aiohttp.__version__,
            "platform": platform.platform(),
        },
        extra=cfg.extra,
        levels=tuple(levels),
        warnings=tuple(warns),
        max_load=cfg.search.result() if cfg.search is not None else None,
        canary=canary_block(state.canary, state.runs) if state.canary is not None else None,
    )
    return summary if cfg.engine is None else apply_engine_baseline(summary, cfg.engine)


def request_timeout_s(cfg: BenchConfig) -> float:
    if cfg.request_timeout_s is not None:
        return cfg.request_timeout_s
    return default_request_timeout_s(*cfg.load.longest_tokens())


def _clock_block(state: RunState) -> dict[str, Any]:
    block: dict[str, Any] = {
        "source": "time.perf_counter_ns (monotonic)",
        "origin_ns": state.t0_ns,
        "note": "record times are ns after origin_ns",
    }
    if state.fleet is not None:
        block["workers"] = state.cfg.workers.to_json()
        block["worker_offsets"] = [c.to_json() for c in state.clocks]
        block["note"] += (
            "; each worker stamps on its own monotonic clock, placed on the driver's axis by "
            "the offset estimated at the start (worker_offsets)"
        )
    return block


async def _start_sampler(state: RunState, root_url: str) -> None:
    """The /metrics sampler, or a warning saying why not: metrics never fail a run."""
    cfg = state.cfg
    if not cfg.scrape:
        return
    from inferlab.address import metrics_url
    from inferlab.metrics.server_checks import metrics_unavailable
    from inferlab.servermetrics.sampler import start_sampler

    url = metrics_url(cfg.metrics_url or root_url)
    state.sampler, why = await start_sampler(url, cfg.out_dir / "server_metrics.jsonl")
    if why is not None:
        explicit = cfg.metrics_url is not None
        state.warnings.append(metrics_unavailable(why.warning_code, str(why), explicit))


def _stop_sampler(state: RunState) -> None:
    if state.sampler is not None:
        state.sampler.close()
        if state.runs and state.runs[-1].server_samples is None:  # a level cut short
            state.runs[-1].server_samples = state.sampler.collected()


def write_summary(path: Path, summary: RunSummary) -> None:
    write_json(path, summary)  # atomic: a crash never leaves half a summary


_NO_TOKENIZER = (
    "the server has no /tokenize: prompt lengths are checked only against usage.prompt_tokens"
)


def note_tokenizer(state: RunState, prompts: list[Prompt]) -> None:
    """Once per run: no prompt was counted on the server, so lengths rest on usage alone."""
    said = any(w.code == "no_tokenizer" for w in state.warnings)
    if not any(p.tokens is not None for p in prompts) and not said:
        state.warnings.append(warning("no_tokenizer", "run", "info", _NO_TOKENIZER))


async def _run_one_level(
    ctx: LevelContext, state: RunState, level: Level, next_id: int, hooks: Hooks, repeat: int = 0
) -> int:
    """Prompts from the level's request specs, then the level; returns how many it sent."""
    cfg = state.cfg
    w = cfg.load
    reqs, warm = w.requests(level), w.warmup_requests(level)
    words = TextSource(cfg.prompt_corpus, cfg.tokenizer)
    target = Target(ctx.session, state.count_at, state.model, words)
    prompts = await make_level_prompts(target, level, warm, reqs, cfg.seed * 1_000_003 + next_id)
    note_tokenizer(state, prompts)
    n = len(prompts)
    if state.settle_slot_count:
        await settle_before(ctx, state, level.label)
    hooks.level_start(level, len(reqs), len(warm))
    run = LevelRun(level, implied_hit_ratio=reqs.implied_hit_ratio, repeat=repeat)
    state.runs.append(run)
    if state.sampler is not None:
        await asyncio.to_thread(state.sampler.begin, level.label)
    with host_ticks_into(run):
        if state.fleet is not None:
            await state.fleet.run_level(ctx, run, prompts, len(warm), next_id, hooks.request_done)
        else:
            await run_level(ctx, run, prompts, len(warm), next_id, hooks.request_done)
    if state.sampler is not None:
        run.server_samples = await asyncio.to_thread(state.sampler.end)
    record_probe(cfg.search, cfg.slo, level.value, run.records)  # --find-max-load: next level
    return n


async def _start_canary(
    state: RunState, session: aiohttp.ClientSession, endpoint: Endpoint
) -> None:
    """The drift canary's readings at rest, before the first level (unless --no-canary)."""
    if not state.cfg.canary:
        return
    state.canary, failed = await start_canary(session, endpoint, state.t0_ns)
    if failed is not None:
        state.warnings.append(failed)


async def settle_before(ctx: LevelContext, state: RunState, label: str) -> None:
    """The slots settled before a level; a failure is a warning and the level runs anyway
    (a server that died then fails it as any level, its results kept)."""
    try:
        await settle_slots(ctx.session, ctx.endpoint, state.settle_slot_count, ctx.t0_ns)
    except InferlabError as e:
        why = f"{e}: the level ran from the slot order the one before left"
        state.warnings.append(warning("settle_failed", label, "warning", why))


async def accept_server(
    session: aiohttp.ClientSession, state: RunState, headers: dict[str, str]
) -> tuple[ServerInfo, Endpoint]:
    """The server, its model and what it can take (bench/preflight.py), or one error."""
    cfg = state.cfg
    deadline_s = query_deadline_s(request_timeout_s(cfg))
    info = state.info = await probe_server(session, cfg.url, headers, deadline_s)
    state.model = pick_model(info, cfg.model)
    endpoint = _endpoint(cfg, info, state.model)
    asked = Asked(cfg.load, cfg.settle_slots, cfg.tokenizer)
    found = await preflight(session, asked, info, endpoint)
    state.settle_slot_count, state.count_at = found.slots, found.count_at
    state.warnings.extend(found.warnings)
    if found.template_tokens is not None:
        cfg.extra.setdefault("prompt_template_tokens", found.template_tokens)
    return info, endpoint


def stop_reason(e: BaseException) -> str:
    """What stopped a run, in words: a signal by its name (the event loop turns SIGINT,
    and SIGTERM/SIGHUP forwarded to it, into a bare CancelledError), else the error."""
    if isinstance(e, asyncio.CancelledError | KeyboardInterrupt):
        from inferlab import signals

        name = signal.Signals(signals.received()).name
        return f"interrupted by {name}" + (" (Ctrl-C)" if name == "SIGINT" else "")
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


@contextlib.contextmanager
def host_ticks_into(run: LevelRun) -> Iterator[None]:
    """The host's CPU ticks (steal time) over the block inside, kept in run.host_ticks."""
    ticks = read_cpu_ticks()
    try:
        yield
    finally:
        end = read_cpu_ticks()
        run.host_ticks = end - ticks if end is not None and ticks is not None else None


def connection_limit(cfg: BenchConfig) -> int:
    """Connections the client may hold: --max-connections, else the top concurrency (64 at
    least) + 8."""
    top = max((int(lv.value) for lv in cfg.levels if lv.kind == "concurrency"), default=64)
    return cfg.max_connections or max(top, 64) + 8


def request_headers(cfg: BenchConfig) -> dict[str, str]:
    """Every request's headers: the API key's bearer, then --header's."""
    auth = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
    return auth | dict(cfg.headers)


def level_context(
    cfg: BenchConfig,
    session: aiohttp.ClientSession,
    writer: RecordWriter,
    t0_ns: int,
    accepted: tuple[ServerInfo, Endpoint],
) -> LevelContext:
    """What a level runs against: one accepted server's endpoint, the writer, the clock."""
    info, endpoint = accepted
    return LevelContext(
        session,
        endpoint,
        writer,
        t0_ns,
        max_tokens=cfg.output_tokens,
        prompt_tokens=cfg.prompt_tokens,
        seed=cfg.seed,
        max_in_flight=connection_limit(cfg),
        root_url=info.root_url,
    )


def stopped_early(e: BaseException) -> RunWarning:
    """The run's `interrupted` warning: what stopped it, in words (stop_reason)."""
    return warning("interrupted", "run", "error", f"the run stopped early: {stop_reason(e)}")


def all_failed(level: LevelSummary) -> bool:
    """Every measured request of the level failed (a level of none is not 'all failed')."""
    return level.requests_measured > 0 and level.requests_ok == 0


def all_failed_warning(level: LevelSummary) -> RunWarning:
    first = level.errors[0] if level.errors else "no error recorded"
    return warning(
        "all_failed",
        level.label,
        "error",
        f"every request of {level.label} failed ({level.requests_failed} of "
        f"{level.requests_measured}; first: {first[:200]}); the sweep stopped there "
        "(--keep-going to go on)",
    )


def _endpoint(cfg: BenchConfig, info: ServerInfo, model: str) -> Endpoint:
    return Endpoint(
        info.base_url,
        model,
        "chat" if cfg.load.conversation is not None else cfg.api,  # turns: the chat API
        cfg.api_key,
        cfg.force_length,
        info.kind,
        request_timeout_s(cfg),
        max_event_bytes=cfg.max_event_bytes,
        cache_prompt=cfg.load.shares_prefix,  # the prefix cache only where prompts share
        extra_body_json=cfg.extra_body_json,
        extra_headers=cfg.headers,
    )


def schedule(cfg: BenchConfig) -> Iterator[tuple[int, Level]]:
    """(repeat, level) in the order they run: the levels once (--find-max-load picks them
    as it goes), or with --repeat N all of them N times over, interleaved (c=1, c=2, c=4,
    c=1, c=2, c=4, ...), so a slow stretch of the machine is spread over the levels."""
    if cfg.repeats <= 1:
        yield from ((0, level) for level in search_levels(cfg.levels, cfg.search))
        return
    for repeat in range(cfg.repeats):
        yield from ((repeat, level) for level in cfg.levels)


def opening_notes(cfg: BenchConfig) -> list[RunWarning]:
    """What a run says before it starts: how the floor was found (or which flag gives
    MBU), and, off Linux, that the host's CPU steal time is not recorded."""
    notes = []
    if cfg.floor_note:
        code = "floor_stated" if cfg.floor is not None else "no_floor"
        notes.append(warning(code, "run", "info", cfg.floor_note))
    if read_cpu_ticks() is None:
        notes.append(warning("no_steal_time", "run", "info", no_steal_note()))
    return notes


async def run_benchmark(cfg: BenchConfig, hooks: Hooks | None = None) -> BenchResult:
    hooks = hooks or Hooks()
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    records_path = cfg.out_dir / "records.jsonl"
    summary_path = cfg.out_dir / "summary.json"
    state = RunState(cfg, time.time(), time.perf_counter_ns(), model=cfg.model or "")
    state.warnings.extend(opening_notes(cfg))
    async with aiohttp.ClientSession(
        connector=make_connector(connection_limit(cfg)), read_bufsize=1 << 20
    ) as session:
        info, endpoint = await accept_server(session, state, request_headers(cfg))
        # Opened only once the server answered: a refused run leaves no empty records file.
        writer = RecordWriter(records_path)
        ctx = level_context(cfg, session, writer, state.t0_ns, (info, endpoint))
        await _start_sampler(state, info.root_url)
        next_id = 0
        try:
            if cfg.workers.enabled:
                state.fleet = await Fleet.open(cfg.workers)
            await _start_canary(state, session, endpoint)
            for repeat, level in schedule(cfg):
                next_id += await _run_one_level(ctx, state, level, next_id, hooks, repeat)
                await after_level(state.canary, session, state.t0_ns, len(state.runs) - 1)
                write_summary(summary_path, summary := build_summary(state))
                done = next(lv for lv in summary.levels if lv.label == level.label)
                hooks.level_end(level, done)
                if all_failed(done) and not cfg.keep_going:
                    state.warnings.append(all_failed_warning(done))
                    break
        except BaseException as e:  # Ctrl-C, a crashed server, anything: keep what finished
            state.interrupted = True
            state.warnings.append(stopped_early(e))
            raise
        finally:
            if state.fleet is not None:
                state.clocks = await state.fleet.close()
                state.warnings.extend(clock_warnings(state.clocks))
            writer.close()
            _stop_sampler(state)
            summary = build_summary(state)
            write_summary(summary_path, summary)
    return BenchResult(summary, state.runs, summary_path, records_path)
