"""Step 3: every level predicted before any request, then on llama-server (all cores but
one, started before the engine alone ran: demo/speed.py) its served profile (profiled.py),
the sweep with `inferlab watch` beside it, the replay of real traffic (trace.py) and the
max load searched; predicted vs measured."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.console.predict_text import prediction_lines, slo_line
from inferlab.console.progress import ProgressHooks
from inferlab.demo.config import DemoConfig
from inferlab.demo.slo import demo_slo
from inferlab.demo.trace import trace_context_tokens, trace_line, with_trace_level
from inferlab.errors import InferlabError
from inferlab.load.workload import Workload

if TYPE_CHECKING:
    from inferlab.bench.benchmark import BenchConfig, BenchResult
    from inferlab.demo.profiled import ProfiledPlan
    from inferlab.demo.speed import EngineAlone
    from inferlab.engines.llama_server import LlamaServer, ServerOptions
    from inferlab.engines.result import EngineBench
    from inferlab.load.spec import Level
    from inferlab.load.workload import TraceLoad
    from inferlab.physics.floor import Floor
    from inferlab.records import RequestRecord
    from inferlab.summary import Predicted
    from inferlab.watch.background import BackgroundWatch


class WatchServer(ProgressHooks):
    """Progress bars, and a clear stop if the server dies mid-sweep."""

    def __init__(self, server: LlamaServer, watch: BackgroundWatch | None = None) -> None:
        super().__init__()
        self.server = server
        self.watch = watch  # inferlab watch beside the sweep: its live numbers on the bar
        self.label = ""

    def level_start(self, level: Level, measured: int, warmup: int = 0) -> None:
        super().level_start(level, measured, warmup)
        self.label = f"{level.label:>10}"

    def request_done(self, rec: RequestRecord) -> None:
        super().request_done(rec)
        if self.watch is not None and self.task is not None:
            self.progress.update(self.task, description=f"{self.label} · {self.watch.status()}")
        if rec.error and not self.server.alive():
            raise InferlabError(
                f"llama-server crashed mid-sweep (exit code {self.server.returncode()}); "
                f"partial results are kept; last lines of {self.server.log_path}:\n"
                f"{self.server.log_tail(8)}"
            )


def sweep_config(
    cfg: DemoConfig,
    out: Path,
    floor: Floor,
    extra: dict[str, Any],
    engine: EngineBench | None,
) -> BenchConfig:
    """The sweep as bench runs it (its address set once the server is up)."""
    from inferlab.bench.benchmark import BenchConfig
    from inferlab.load.spec import Level

    return BenchConfig(
        url="",
        model=None,
        load=Workload.fixed(
            prompt_tokens=cfg.prompt_tokens,
            output_tokens=cfg.output_tokens,
            levels=[Level("concurrency", c) for c in cfg.levels],
            requests_per_level=cfg.requests_per_level,
            warmup=cfg.warmup,
            seed=cfg.seed,
        ),
        stall_factor=cfg.stall_factor,
        lag_threshold_s=cfg.lag_threshold_s,
        request_timeout_s=cfg.request_timeout_s,
        out_dir=out,
        floor=floor,
        command=list(cfg.command),
        extra=extra,
        engine=engine,
        slo=demo_slo(cfg.slo, cfg.min_attainment),
        settle_slots=True,  # each level from an idle server's slot order, as predicted
    )


def predict_first(
    bench: BenchConfig,
    opts: ServerOptions,
    trace: TraceLoad | None,
    engine: EngineBench | None,
    slo_given: bool,
) -> dict[str, Predicted]:
    """Before any request: the Poisson level at 70 % of the predicted capacity, the
    trace level, and every level predicted from the engine alone (printed)."""
    from inferlab.demo.levels import poisson_level
    from inferlab.sim.predict import describe_source, make_predictor, predict_levels

    pr = make_predictor(engine, opts.parallel, opts.parallel * opts.ctx_per_slot, bench.slo)
    if bench.slo is not None:  # the demo's sweep always has one (demo_slo)
        bench.extra["slo"] = slo_line(bench.slo, slo_given)
        print(f"    {bench.extra['slo']}", flush=True)
    preds: dict[str, Predicted] = {}
    if pr is not None:
        try:
            rate, how = poisson_level(pr, bench.load, max(bench.levels, key=lambda x: x.value))
            bench.load = dataclasses.replace(bench.load, levels=(*bench.load.levels, rate))
            print(f"    {how}", flush=True)
        except InferlabError as e:
            print(f"    no Poisson level: {e}")
    else:
        print("    no Poisson level and no prediction: the engine alone was not measured")
    with_trace_level(bench, trace)
    if pr is not None:
        print(f"    predictions from {describe_source(pr.model, pr.knobs)}; all held out")
        preds, skipped = predict_levels(pr, bench.load)
        for line in [*skipped, *prediction_lines(preds)]:
            print(f"    {line}", flush=True)
    return preds


def server_options(
    cfg: DemoConfig, out: Path, gguf: Path, threads: int, trace: TraceLoad | None
) -> ServerOptions:
    """llama-server as the demo runs it: a slot per user of the largest level, each slot
    the sweep's and the trace's longest request."""
    from inferlab.engines.llama_server import ServerOptions

    return ServerOptions(
        gguf,
        None,
        parallel=max(cfg.levels),
        ctx_per_slot=max(cfg.prompt_tokens + cfg.output_tokens, trace_context_tokens(trace)) + 64,
        threads=threads,
        log_path=out / "llama-server.log",
    )


def serve_and_sweep(
    cfg: DemoConfig,
    out: Path,
    srv: LlamaServer,
    trace: TraceLoad | None,
    floor: Floor,
    extra: dict[str, Any],
    engine: EngineAlone,
) -> BenchResult:
    """Step 3: predict every level, then on llama-server (up since the engine alone ran,
    on all cores but one) the profile and the sweep; predicted vs measured."""
    levels, requests, out_tokens = list(cfg.levels), cfg.requests_per_level, cfg.output_tokens
    cores, threads, opts = extra["machine_cores"], extra["server_threads"], srv.opts
    print(
        f"3/4 predict + serve + sweep: llama-server with {threads} of {cores} cores (the client "
        f"keeps {cores - threads}), {max(levels)} slots; levels {levels}, {requests} requests "
        f"each, {cfg.prompt_tokens} prompt -> {out_tokens} forced output tokens, then a "
        f"Poisson level{trace_line(trace)}; server log {opts.log_path}",
        flush=True,
    )
    bench = sweep_config(cfg, out, floor, extra, engine.bench)
    preds = predict_first(bench, opts, trace, engine.bench, cfg.slo is not None)
    extra["llama_server"] = " ".join(srv.command()[1:])
    bench.url = srv.base_url
    result, profiled, searched = _measured(cfg, bench, srv, opts, (floor, engine.bench))
    from inferlab.bench.benchmark import write_summary
    from inferlab.demo.speed import with_engine_shifts

    measured = result.summary
    if preds or profiled is not None:  # the measured levels with their predictions and errors
        from inferlab.demo.profiled import compared

        result.summary, lines = compared(result.summary, preds, profiled, searched, bench.load)
        for line in lines:
            print("  " + line)
    result.summary = with_engine_shifts(result.summary, engine)  # read beside the split
    if result.summary is not measured:
        write_summary(result.summary_path, result.summary)
    return result


def _measured(
    cfg: DemoConfig,
    bench: BenchConfig,
    srv: LlamaServer,
    opts: ServerOptions,
    floor_engine: tuple[Floor, EngineBench | None],
) -> tuple[BenchResult, ProfiledPlan | None, str | None]:
    """On the running server: its profile and predictions, the sweep with `inferlab watch`
    beside it (live MBU on the progress bar, recorded for the report), the max load."""
    from inferlab.console.sweep import execute
    from inferlab.demo.profiled import plan_from_profile, searched_max
    from inferlab.watch.background import BackgroundWatch
    from inferlab.watch.derive import EngineFloor

    out, ctx = bench.out_dir, opts.parallel * opts.ctx_per_slot
    threads = bench.extra["server_threads"]
    profiled = plan_from_profile(bench, srv.base_url, out, threads, opts.parallel, ctx)
    watched = EngineFloor.of(*floor_engine)  # the engine alone: one verdict with the report
    with BackgroundWatch(srv.base_url, watched, out / "watch.jsonl", 0.5, 3.0) as w:
        result = execute(bench, no_plots=True, hooks=WatchServer(srv, w), wide=cfg.wide)
    searched = None
    if profiled is not None:
        searched = searched_max(bench, cfg.quick, WatchServer(srv))[1]
    return result, profiled, searched
