"""The demo plans with a served profile: profile the server, predict every level, then measure.

Once llama-server is up and before any level is measured, the demo runs `inferlab
profile`'s fixed probes against it (budget 1: about 3 min for 16 slots on 2 cores, less
for --quick's 4 slots, whose grid is smaller) and keeps DIR/profile.json. Every level of
the sweep is then predicted from the profile alone (its step model and per-request
costs, llama-server's scheduler at the demo's --parallel and context), and the highest
concurrency within the demo's SLO is predicted by the simulator's search. After the
sweep, the same search runs on the real server (bench's --find-max-load concurrency;
skipped with --quick, and said so), and the table shows predicted / measured / error.
A profile that fails leaves the demo with the engine-alone prediction (one line says why).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.errors import InferlabError

if TYPE_CHECKING:
    from inferlab.bench.benchmark import BenchConfig
    from inferlab.console.progress import ProgressHooks
    from inferlab.load.workload import Workload
    from inferlab.profile.record import ProfileRecord
    from inferlab.sim.predict import Predictor
    from inferlab.slo.grammar import Slo
    from inferlab.summary import Canary, Predicted, RunSummary

SEARCH_LEVELS = 5  # the max-load search's levels, on each side
SEARCH_REQUESTS = 16  # requests per searched level, on each side


@dataclass(frozen=True, slots=True)
class ProfiledPlan:
    """What the profile predicts: every level by label, and the highest concurrency
    within the SLO (None: no level holds it)."""

    predictor: Predictor
    preds: dict[str, Predicted]
    max_concurrency: float | None
    max_line: str
    canary: Canary | None = None  # the profile's drift canary: its machine speed


def _profile(url: str, out: Path, threads: int) -> ProfileRecord:
    from inferlab.jsonio import write_json
    from inferlab.profile.record import PROFILE_NAME
    from inferlab.profile.run_profile import ProfileConfig, run_profile

    def say(line: str) -> None:
        print(f"      {line}", flush=True)

    record = run_profile(ProfileConfig(url=url, budget=1, threads=threads, progress=say))
    write_json(out / PROFILE_NAME, record)
    return record


def profiled_predictor(
    record: ProfileRecord, parallel: int, ctx: int, slo: Slo | None
) -> Predictor:
    """The profile's step model and request costs on llama-server's scheduler."""
    from inferlab.sim.policies.llamacpp import LlamaCppKnobs
    from inferlab.sim.predict import Predictor
    from inferlab.sim.steptime.profile import ProfileStepTime, costs_of

    model = ProfileStepTime.from_profile(record)
    knobs = LlamaCppKnobs(parallel=parallel, ctx_size=ctx)
    return Predictor(model, knobs, slo, costs_of(model, record))


def closed_workload(cfg: BenchConfig) -> Workload:
    """The sweep's closed loop (no trace), sized for one searched level."""
    return dataclasses.replace(cfg.load, levels=(), trace=None, requests_per_level=SEARCH_REQUESTS)


def predicted_max(pr: Predictor, cfg: BenchConfig, top: int) -> float | None:
    """The simulator's --find-max-load concurrency within the SLO, on the sweep's lengths."""
    from inferlab.sim.predict import predict_config
    from inferlab.sim.simulated_run import search
    from inferlab.slo.search import SearchSpec

    sim = predict_config(pr.model, pr.knobs, pr.slo, pr.costs)
    spec = SearchSpec("concurrency", 1.0, float(top), SEARCH_LEVELS)
    desc = {"step_time_model": "profiled"}
    sim = dataclasses.replace(sim, workload=closed_workload(cfg), search=spec, description=desc)
    found = search(sim).summary.max_load
    return found.value if found is not None else None


def plan_from_profile(
    cfg: BenchConfig, url: str, out: Path, threads: int, parallel: int, ctx: int
) -> ProfiledPlan | None:
    """Profile the served engine, then predict every level and the max load from it."""
    from inferlab.console.predict_text import prediction_lines
    from inferlab.sim.predict import predict_levels
    from inferlab.sim.steptime.profile import ProfileStepTime

    print(
        "    profile: the served engine's fixed probes (inferlab profile; it speaks "
        "llama-server and vLLM) ...",
        flush=True,
    )
    try:
        record = _profile(url, out, threads)
    except InferlabError as e:
        print(f"    profile: not measured: {e}; the levels keep the engine-alone prediction")
        return None
    pr = profiled_predictor(record, parallel, ctx, cfg.slo)
    print(f"    predictions from {out / 'profile.json'}; all held out", flush=True)
    spread = pr.model.fit.spread_line() if isinstance(pr.model, ProfileStepTime) else None
    if spread:
        print(f"    {spread}", flush=True)
    preds, skipped = predict_levels(pr, cfg.load)
    for line in [*skipped, *prediction_lines(preds)]:
        print(f"    {line}", flush=True)
    top = int(max(lv.value for lv in cfg.levels if lv.kind == "concurrency"))
    most = predicted_max(pr, cfg, top)
    line = f"max concurrency within {cfg.slo.text if cfg.slo else 'the SLO'}: predicted {most}"
    print(f"    {line} (the simulator's search, {SEARCH_REQUESTS} requests a level)", flush=True)
    return ProfiledPlan(pr, preds, most, line, record.canary)


def searched_max(cfg: BenchConfig, quick: bool, hooks: ProgressHooks) -> tuple[float | None, str]:
    """bench's --find-max-load concurrency on the real server (skipped with --quick)."""
    if quick:
        return None, "searched: skipped with --quick (a search measures up to 5 levels)"
    from inferlab.console.sweep import execute
    from inferlab.load.spec import Level
    from inferlab.slo.search import SearchSpec

    top = int(max(lv.value for lv in cfg.levels if lv.kind == "concurrency"))
    search = SearchSpec("concurrency", 1.0, float(top), SEARCH_LEVELS).begin()
    sub = dataclasses.replace(
        cfg,
        load=dataclasses.replace(closed_workload(cfg), levels=(Level("concurrency", top),)),
        search=search,
        out_dir=cfg.out_dir / "max-load",
    )
    found = execute(sub, no_plots=True, hooks=hooks).summary.max_load
    value = found.value if found is not None else None
    return value, f"searched {value} on the server (bench --find-max-load, {sub.out_dir})"


def compared(
    summary: RunSummary,
    engine_preds: dict[str, Predicted],
    plan: ProfiledPlan | None,
    searched: str | None,
    workload: Workload | None = None,
) -> tuple[RunSummary, list[str]]:
    """The measured summary carrying its predictions (the profile's, else the engine
    alone's), and the lines that compare them: the table, each quantity graded against the
    measurement's own interval, the band, the machine's speed since the profile (the drift
    canary's move, and where it moved beyond its noise each level re-simulated from
    `workload` at the measurement's speed: demo/speed.py), the prefix-cache hit ratios,
    the engine-alone table beside (what serving costs) and the max-load answer."""
    from inferlab.console.predict_text import (
        ENGINE_ALONE,
        PROFILED,
        comparison_lines,
        graded_lines,
        hit_ratio_lines,
        speed_lines,
    )
    from inferlab.demo.speed import at_measured_speed
    from inferlab.metrics.scoring import attach
    from inferlab.report.predicted import band_lines, preemption_lines

    primary = plan.preds if plan is not None else engine_preds
    kept = attach(summary, primary)
    if plan is not None:
        kept = at_measured_speed(kept, plan.predictor, plan.canary, workload)
    lines = comparison_lines(kept, PROFILED if plan is not None else ENGINE_ALONE)
    lines += graded_lines(kept)
    lines += band_lines(kept)
    lines += speed_lines(kept)
    lines += hit_ratio_lines(kept)
    lines += preemption_lines(kept)
    if plan is not None and engine_preds:
        lines += comparison_lines(attach(summary, engine_preds), ENGINE_ALONE)
    if plan is not None:
        lines.append(f"{plan.max_line}; {searched or 'searched: not run'}")
    return kept, lines
