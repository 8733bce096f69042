"""A whole sweep: check the server, make prompts, run each level, write records and summary.

Records are appended as each request completes; summary.json is rewritten
after every level, so Ctrl-C or a crash keeps everything that finished.
"""

from __future__ import annotations

import asyncio
import json
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from inferlab import __version__
from inferlab.bench.client import Endpoint, make_connector
from inferlab.bench.records import RecordWriter, RequestRecord
from inferlab.bench.runner import Level, LevelRun, lag_p99_s, run_level
from inferlab.bench.server import ServerInfo, pick_model, probe_server
from inferlab.bench.workload import make_prompts
from inferlab.engines.engine_result import EngineBench
from inferlab.metrics.checks import check_level, warning
from inferlab.metrics.compare import compare_level
from inferlab.metrics.decomposition import apply_engine_baseline
from inferlab.metrics.level import summarize_level
from inferlab.physics.decode import decode_point
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Floor:
    cost: ModelCost
    hardware: HardwareSpec


@dataclass(slots=True)
class BenchConfig:
    url: str
    model: str | None
    levels: list[Level]
    requests_per_level: int = 64
    warmup: int | None = None  # per level; default: one request per stream
    prompt_tokens: int = 32
    output_tokens: int = 256
    api: str = "completions"
    api_key: str | None = field(default=None, repr=False)
    force_length: bool = True
    stall_factor: float = 5.0
    lag_threshold_s: float = 0.005
    seed: int = 0
    # Open connections at most (default: the highest concurrency, at least 64, plus a margin).
    # In rate mode a request beyond it waits in the client, recorded as queue delay.
    max_connections: int | None = None
    out_dir: Path = Path("results/run")
    floor: Floor | None = None
    command: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the demo's server/probe facts
    engine: EngineBench | None = None  # engine alone (engine-bench): per-level floor/engine/served


@dataclass(slots=True)
class BenchResult:
    summary: dict[str, Any]
    runs: list[LevelRun]
    summary_path: Path
    records_path: Path


class Hooks:
    """Console feedback; the CLI passes a rich progress bar, tests pass nothing."""

    def level_start(self, level: Level, total: int) -> None: ...
    def request_done(self, rec: RequestRecord) -> None: ...
    def level_end(self, level: Level, summary: dict[str, Any]) -> None: ...


def floor_block(floor: Floor | None) -> dict[str, Any] | None:
    if floor is None:
        return None
    c, hw = floor.cost, floor.hardware
    return {
        "model": c.name,
        "model_source": c.source,
        "weight_bytes_resident": c.weight_bytes_resident,
        "weight_bytes_per_step": c.weight_bytes_per_step(1),
        "kv_bytes_per_token": c.kv_bytes_per_token,
        "hardware": hw.name,
        "hardware_source": hw.source,
        "bandwidth_bytes_per_s": hw.bandwidth_bytes_per_s,
        "peak_flops_per_s": hw.peak_flops(c.compute_dtype),
    }


def _level_block(cfg: BenchConfig, run: LevelRun) -> tuple[dict[str, Any], list[dict[str, str]]]:
    lv = run.level
    s = summarize_level(lv.label, lv.kind, lv.value, run.records, cfg.stall_factor)
    client = {
        "cpu_s": run.client_cpu_s,
        "wall_s": run.wall_s,
        "cpu_fraction": run.client_cpu_s / run.wall_s if run.wall_s else 0.0,
        "loop_lag_p99_s": lag_p99_s(run.loop_lag_s),
        "loop_lag_max_s": max(run.loop_lag_s, default=0.0),
    }
    s["client"] = client
    s["interrupted"] = run.interrupted
    ceiling = None
    if cfg.floor is not None:
        s.update(
            compare_level(
                s, cfg.floor.cost, cfg.floor.hardware, cfg.prompt_tokens, cfg.output_tokens
            )
        )
        ceiling = decode_point(cfg.floor.cost, cfg.floor.hardware, 1, cfg.prompt_tokens)
    expected_prompt = cfg.prompt_tokens + int(cfg.extra.get("prompt_template_tokens", 0))
    warns = check_level(
        s,
        run.records,
        expected_prompt,
        ceiling.tokens_per_s_per_user if ceiling else None,
        client,
        cfg.lag_threshold_s,
    )
    return s, warns


def build_summary(
    cfg: BenchConfig,
    info: ServerInfo | None,
    model: str,
    runs: list[LevelRun],
    started: float,
    run_warnings: list[dict[str, str]],
    interrupted: bool,
    t0_ns: int = 0,
) -> dict[str, Any]:
    levels, warns = [], list(run_warnings)
    for run in runs:
        s, w = _level_block(cfg, run)
        levels.append(s)
        warns.extend(w)
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": f"inferlab {__version__}",
        "command": cfg.command,
        "started_at_unix_s": started,
        "clock": {
            "source": "time.perf_counter_ns (monotonic)",
            "origin_ns": t0_ns,
            "note": "record times are ns after origin_ns",
        },
        "interrupted": interrupted,
        "server": {
            "url": cfg.url,
            "kind": info.kind if info else None,
            "model": model,
            "models_answer": info.models_answer if info else None,
        },
        "workload": {
            "api": cfg.api,
            "prompt_tokens": cfg.prompt_tokens,
            "output_tokens": cfg.output_tokens,
            "requests_per_level": cfg.requests_per_level,
            "warmup_per_level": cfg.warmup,
            "force_length": cfg.force_length,
            "stall_factor": cfg.stall_factor,
            "seed": cfg.seed,
        },
        "floor": floor_block(cfg.floor),
        "client_host": {
            "python": sys.version.split()[0],
            "aiohttp": aiohttp.__version__,
            "platform": platform.platform(),
        },
        "extra": cfg.extra,
        "levels": levels,
        "warnings": warns,
    }
    if cfg.engine is not None:
        apply_engine_baseline(summary, cfg.engine)
    return summary


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(summary, indent=2, default=str))
    tmp.replace(path)  # atomic: a crash never leaves half a summary


def event_loop_runner() -> Any:
    """asyncio.run, on uvloop where it is installed (less per-event overhead)."""
    try:
        import uvloop

        return uvloop.run
    except ImportError:
        return asyncio.run


async def run_benchmark(cfg: BenchConfig, hooks: Hooks | None = None) -> BenchResult:
    hooks = hooks or Hooks()
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    records_path = cfg.out_dir / "records.jsonl"
    summary_path = cfg.out_dir / "summary.json"
    writer = RecordWriter(records_path)
    started = time.time()
    t0_ns = time.perf_counter_ns()
    top = max((int(lv.value) for lv in cfg.levels if lv.kind == "concurrency"), default=64)
    limit = cfg.max_connections or max(top, 64) + 8
    connector = make_connector(limit)
    runs: list[LevelRun] = []
    info: ServerInfo | None = None
    model = cfg.model or ""
    run_warnings: list[dict[str, str]] = []
    interrupted = False
    async with aiohttp.ClientSession(connector=connector, read_bufsize=1 << 20) as session:
        headers = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
        info = await probe_server(session, cfg.url, headers)
        model = pick_model(info, cfg.model)
        endpoint = Endpoint(info.base_url, model, cfg.api, cfg.api_key, cfg.force_length, info.kind)
        next_id = 0
        try:
            for level in cfg.levels:
                warm = cfg.warmup if cfg.warmup is not None else max(1, int(level.value))
                if level.kind == "rate":
                    warm = cfg.warmup if cfg.warmup is not None else 2
                n = warm + cfg.requests_per_level
                seeds = [cfg.seed * 1_000_003 + next_id + i for i in range(n)]
                prompts = await make_prompts(
                    session, info.root_url, model, cfg.prompt_tokens, seeds
                )
                counted = [p.tokens for p in prompts if p.tokens is not None]
                if not counted and not run_warnings:
                    run_warnings.append(
                        warning(
                            "no_tokenizer",
                            "run",
                            "info",
                            "the server has no /tokenize: prompt lengths are checked only against "
                            "usage.prompt_tokens",
                        )
                    )
                hooks.level_start(level, n)
                run = LevelRun(level)
                runs.append(run)
                await run_level(
                    session,
                    endpoint,
                    run,
                    prompts,
                    warm,
                    cfg.output_tokens,
                    cfg.prompt_tokens,
                    writer,
                    t0_ns,
                    next_id,
                    hooks.request_done,
                    seed=cfg.seed + next_id,
                    max_in_flight=limit,
                )
                next_id += n
                summary = build_summary(cfg, info, model, runs, started, run_warnings, False, t0_ns)
                write_summary(summary_path, summary)
                hooks.level_end(level, summary["levels"][-1])
        except BaseException as e:  # Ctrl-C, a crashed server, anything: keep what finished
            interrupted = True
            run_warnings.append(
                warning(
                    "interrupted", "run", "error", f"the run stopped early: {type(e).__name__}: {e}"
                )
            )
            raise
        finally:
            writer.close()
            summary = build_summary(
                cfg, info, model, runs, started, run_warnings, interrupted, t0_ns
            )
            write_summary(summary_path, summary)
    return BenchResult(summary, runs, summary_path, records_path)
