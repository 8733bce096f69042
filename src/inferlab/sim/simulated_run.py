"""A simulated run, as bench's: `run(cfg)` simulates its one level, `search(cfg)` the levels
the max-load search picks (slo/search.py, the same search bench drives), and `write_run`
keeps records.jsonl and summary.json in a run folder, as bench does.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab.errors import ConfigError, InferlabError
from inferlab.load.spec import Level
from inferlab.sim.output import build_summary, iter_records, write_records
from inferlab.sim.simulate_level import SimConfig, SimLevel, simulate_level, simulate_probe
from inferlab.sim.steptime.ranges import check_batches, fit_lines
from inferlab.slo.attainment import SloLevel
from inferlab.summary import RunSummary

SEARCH_REQUESTS = 64  # requests per closed-loop probe at least: bench's --requests-per-level


@dataclass(frozen=True, slots=True)
class SimRun:
    """The run's summary.json, every level simulated (in order), what the step-time fit
    says about the batches it ran, and the seconds the simulation took."""

    summary: RunSummary
    levels: tuple[SimLevel, ...]
    fit_lines: tuple[str, ...] = ()
    wall_s: float = 0.0


def settings(cfg: SimConfig) -> dict[str, Any]:
    """summary.json's `simulation` block: the step time's description and the scheduler."""
    p = cfg.policy
    return {
        **cfg.description,
        "policy": p.name,
        "max_batch": p.max_batch,
        "chunk_tokens": p.chunk_tokens,
        "kv_capacity_tokens": p.kv_capacity_tokens,
        "block_tokens": p.block_tokens,
        "seed": cfg.workload.seed if cfg.workload else 0,
        **({"policy_knobs": dict(p.knobs)} if p.knobs else {}),  # vLLM's beyond these
    }


def workload_json(cfg: SimConfig, sl: SimLevel) -> dict[str, Any]:
    """summary.json's workload block for a simulated level."""
    w, r = sl.workload, sl.requests
    assert w is not None
    n = len(r)
    ranges = {
        f"{name}_range": [int(col.min()), int(col.max())] if n else [0, 0]
        for name, col in (("prompt_tokens", r.prompt_tokens), ("output_tokens", r.output_tokens))
    }
    return {
        "prompt_tokens": round(float(r.prompt_tokens.mean())) if n else 0,
        "output_tokens": round(float(r.output_tokens.mean())) if n else 0,
        **ranges,
        "prompt_tokens_dist": w.prompt.describe(),
        "output_tokens_dist": w.output.describe(),
        "requests_per_level": len(sl.result.requests),
        "users": (sl.users.users or 0) if sl.users else 0,
        "injected": list(cfg.injected),
        "load": w.to_json(),
    }


def _users(level: Level) -> int | None:
    return int(level.value) if level.kind == "concurrency" else None


def run(cfg: SimConfig) -> SimRun:
    """Simulate the config's one level: its summary.json, as bench writes one."""
    if len(cfg.levels) != 1:
        raise ConfigError("simulate runs one level: give one {concurrency} or {rate} value")
    (level,) = cfg.levels
    users = _users(level)
    lines = check_batches(cfg.model, cfg.policy, users)  # a closed loop's batch: up front
    t = time.perf_counter()
    sl = simulate_level(cfg, level)  # an open loop's: refused by a batch it reaches
    wall = time.perf_counter() - t
    if users is None:  # said at the batch it ran, not at the policy's bound
        lines = fit_lines(cfg.model, sl.result.most_decoders)
    config = {**settings(cfg), "workload": workload_json(cfg, sl), "wall_s": wall}
    summary = build_summary(sl.result, sl.summary, config, list(cfg.command))
    return SimRun(summary, (sl,), tuple(lines), wall)


def search(cfg: SimConfig, progress: Callable[[SimLevel], None] = lambda s: None) -> SimRun:
    """The highest load within the SLO: each probe one simulated level, judged as bench
    judges one; every probe is a level of the summary, and `max_load` the answer."""
    from inferlab.slo.search import find_max_load

    spec = cfg.search
    if spec is None or cfg.slo is None:
        raise ConfigError("{search} needs {slo}, e.g. {slo} tpot_p99=50ms")
    if cfg.injected or (cfg.workload and cfg.workload.trace is not None):
        raise InferlabError("{search} simulates its own load: leave out {trace} and {injected}")
    probe_cfg = dataclasses.replace(cfg, min_requests=SEARCH_REQUESTS)
    probes: list[SimLevel] = []

    def measure(value: float) -> SloLevel:
        level = Level(spec.kind, int(value) if spec.kind == "concurrency" else value)
        check_batches(cfg.model, cfg.policy, _users(level))  # a rate probe: as it runs
        sl = simulate_probe(probe_cfg, level, level.label)
        probes.append(sl)
        progress(sl)
        assert sl.summary.slo is not None  # the config has an SLO
        return sl.summary.slo

    found = find_max_load(measure, spec)
    last = probes[-1]
    workload = {
        "prompt_tokens": _mean(last, "prompt_tokens"),
        "output_tokens": _mean(last, "output_tokens"),
        "requests_per_level": len(last.result.requests),
    }
    config = {**settings(cfg), "workload": workload}
    summary = build_summary(last.result, last.summary, config, list(cfg.command))
    levels = tuple(p.summary for p in probes)
    return SimRun(dataclasses.replace(summary, levels=levels, max_load=found), tuple(probes))


def _mean(sl: SimLevel, name: str) -> int:
    """The last probe's mean length (the load flags may draw a distribution)."""
    n = len(sl.result.requests)
    return round(sum(getattr(r, name) for r in sl.result.requests) / n) if n else 0


def write_run(r: SimRun, out: Path, overwrite: bool = False, append: bool = False) -> Path:
    """records.jsonl (every level's) and summary.json in the run folder `out` claims."""
    from inferlab.jsonio import write_json
    from inferlab.metrics.runfolder import claim_run_folder

    with claim_run_folder(out, overwrite, append) as folder:
        records = (
            rec
            for sl in r.levels
            for rec in iter_records(sl.result, sl.summary.label, sl.times, sl.requests)
        )
        write_records(folder / "records.jsonl", records)
        write_json(folder / "summary.json", r.summary)
    return folder
