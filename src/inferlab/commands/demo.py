"""`inferlab demo`: the lesson of the decode phase on this machine, with real numbers.

probe -> floor for the served GGUF on `this-machine` -> the engine alone (engine-bench)
-> every level predicted from it before any request (sim/predict.py) -> a real
llama.cpp server -> its served profile, every level and the max load within the SLO
predicted from it before any level is measured (demo_profile.py) -> a concurrency
sweep (short prompts, forced outputs), a Poisson level at 70 % of the predicted
capacity, then 30 s of real traffic (a slice of the Azure conversation trace, see
demo_trace.py) -> the max load searched on the server -> predicted vs measured,
table, reading, report.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from inferlab import signals
from inferlab.commands.bench import default_out
from inferlab.commands.common import whole
from inferlab.commands.demo_predict import add_slo_flags, demo_slo
from inferlab.commands.demo_trace import (
    add_trace_flags,
    demo_trace,
    read_trace_level,
    trace_context_tokens,
    trace_line,
    with_trace_level,
)
from inferlab.console.predict_text import prediction_lines, slo_line
from inferlab.console.progress import ProgressHooks
from inferlab.errors import InferlabError
from inferlab.runfolder import claim_run_folder


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="probe, serve SmolLM2 locally, sweep, report (a few minutes)")
    p.add_argument("--quick", action="store_true", help="under 2 minutes: fewer levels and tokens")
    p.add_argument("--gguf", type=Path, help="serve this GGUF instead of the bundled SmolLM2")
    p.add_argument("--threads", type=whole(1, 4096), help="server threads (all cores but one)")
    p.add_argument(
        "--no-engine-bench", action="store_true", help="skip the engine-alone measurement"
    )
    add_demo_sweep_args(p)
    add_trace_flags(p)
    add_slo_flags(p)
    p.set_defaults(run=run)


def add_demo_sweep_args(p: argparse.ArgumentParser) -> None:
    """The sweep's flags the demo reads, with the demo's own defaults (bench has more)."""
    from inferlab.commands.bench_args import add_honesty_args, add_run_folder_args
    from inferlab.commands.common import TIME, int_list

    g = p.add_argument_group("the sweep (fixed lengths, closed loop)")
    g.add_argument(
        "--concurrency",
        metavar="LIST",
        type=int_list,
        help="levels, streams (1,2,4,8,16; 1,2,4 with --quick)",
    )
    g.add_argument(
        "--requests-per-level",
        metavar="N",
        type=whole(1, 10**6),
        help="measured requests per level (16; 4 with --quick)",
    )
    g.add_argument(
        "--prompt-tokens", metavar="N", type=whole(1, 10**6), default=32, help="prompt (32)"
    )
    g.add_argument(
        "--output-tokens",
        metavar="N",
        type=whole(2, 10**6),
        help="forced output tokens (128; 32 with --quick)",
    )
    g.add_argument(
        "--warmup",
        metavar="N",
        type=whole(0, 10**6),
        help="warm-up requests per level, not counted (one per stream)",
    )
    g.add_argument("--seed", metavar="N", type=whole(0), default=0, help="prompts' seed (0)")
    g.add_argument(
        "--request-timeout",
        type=TIME,
        help="end a request still running after this long (60s + 1s per output token)",
    )
    add_honesty_args(g)
    add_run_folder_args(p)
    p.add_argument("--wide", action="store_true", help="every column in the sweep table")


# The engine-alone measurement's budget: the demo stays within a few minutes.
ENGINE_TIMEOUT_S, ENGINE_TIMEOUT_QUICK_S = 300.0, 90.0


class _WatchServer(ProgressHooks):
    """Progress bars, and a clear stop if the server dies mid-sweep."""

    def __init__(self, server: Any, watch: Any = None) -> None:
        super().__init__()
        self.server = server
        self.watch = watch  # inferlab watch beside the sweep: its live numbers on the bar
        self.label = ""

    def level_start(self, level: Any, measured: int, warmup: int = 0) -> None:
        super().level_start(level, measured, warmup)
        self.label = f"{level.label:>10}"

    def request_done(self, rec: Any) -> None:
        super().request_done(rec)
        if self.watch is not None and self.task is not None:
            self.progress.update(self.task, description=f"{self.label} · {self.watch.status()}")
        if rec.error and not self.server.alive():
            raise InferlabError(
                f"llama-server crashed mid-sweep (exit code {self.server.proc.returncode}); "
                f"partial results are kept; last lines of {self.server.log_path}:\n"
                f"{self.server.log_tail(8)}"
            )


def _fixed(value: str | int | None, flag: str) -> int | None:
    """The demo's lengths are fixed: one whole number of tokens."""
    if value is None or isinstance(value, int):
        return value
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise InferlabError(f"{flag} {value!r}: the demo takes a fixed length N >= 1")
    return n


def plan(args: argparse.Namespace) -> tuple[list[int], int, int]:
    levels = args.concurrency or ([1, 2, 4] if args.quick else [1, 2, 4, 8, 16])
    requests = args.requests_per_level or (4 if args.quick else 16)
    out_tokens = _fixed(args.output_tokens, "--output-tokens") or (32 if args.quick else 128)
    return levels, requests, out_tokens


def _probe(quick: bool) -> Any:
    """Step 1: this machine's read bandwidth and FLOPS, saved as `this-machine`."""
    from inferlab.probe.machine import run_probe, save
    from inferlab.units import fmt_bandwidth

    print("1/4 probe: this machine's memory bandwidth and FLOPS ...", flush=True)
    # 1 GiB arrays even when quick: 256 MiB partly fits this EPYC's cache (55 vs 32 GB/s).
    pr = run_probe(
        array_bytes=1 << 30,
        repeats=4 if quick else 10,
        gpu=False,
    )
    save(pr)
    print(
        f"    read {fmt_bandwidth(pr.bandwidth.read_bytes_per_s)} (the floor uses this: decode "
        f"reads weights and KV), copy {fmt_bandwidth(pr.bandwidth.copy_bytes_per_s)} "
        f"(read+write), fp32 matmul {pr.flops.fp32_flops_per_s / 1e9:.0f} GFLOP/s"
    )
    return pr


def _floor(gguf: Path, prompt_tokens: int, output_tokens: int) -> Any:
    """Step 2: the floor for the served GGUF's real tensor bytes on this machine, at one
    stream and the sweep's mean context: the figure the c=1 row and the reading state."""
    from inferlab.metrics.compare import compare_at
    from inferlab.physics.floor import Floor
    from inferlab.specs.cost import derive_cost
    from inferlab.specs.hardware import get_hardware
    from inferlab.specs.resolve import resolve_model
    from inferlab.units import fmt_bandwidth, fmt_bytes

    hw = get_hardware("this-machine")
    cost = derive_cost(resolve_model(str(gguf)))
    context = int(prompt_tokens + output_tokens / 2)  # as metrics.compare.compare_level
    at = compare_at(cost, hw, 1, context, None)
    step = at.predicted_step_time_s
    print(
        f"2/4 floor: {gguf.name}: {fmt_bytes(at.bytes_per_step)} of real tensor and KV "
        f"bytes per step (one stream, {context} tokens of context) / "
        f"{fmt_bandwidth(hw.bandwidth_bytes_per_s)} = {step * 1e3:.2f} ms "
        f"(<= {1 / step:.0f} tok/s per user)",
        flush=True,
    )
    return Floor(cost, hw)


def engine_alone(
    args: argparse.Namespace,
    gguf: Path,
    threads: int,
    levels: list[int],
    out_tokens: int,
    out: Path,
) -> tuple[Any, dict[str, str]]:
    """llama.cpp's own benchmarks before the sweep, same model, threads, context and lengths.

    Returns the result (None if it cannot run: one line says why, and the demo goes on
    with floor and served only) and the fact the report's setup table shows.
    """
    from inferlab.engines.llama_bench import RESULT_NAME, EngineBenchConfig, run_engine_bench
    from inferlab.jsonio import write_json

    if args.no_engine_bench:
        return None, {"engine_alone": "skipped (--no-engine-bench)"}
    cfg = EngineBenchConfig(
        gguf,
        threads,
        tuple(levels),
        args.prompt_tokens,
        out_tokens,
        ctx_per_slot=args.prompt_tokens + out_tokens + 64,  # as the server's slots
        repetitions=2 if args.quick else 3,
        timeout_s=ENGINE_TIMEOUT_QUICK_S if args.quick else ENGINE_TIMEOUT_S,
    )
    print(
        f"    engine alone: llama-batched-bench + llama-bench, {threads} thread(s), batches "
        f"{levels}, {cfg.prompt_tokens} -> {out_tokens} tokens, no HTTP ...",
        flush=True,
    )
    try:
        eb = run_engine_bench(cfg)
    except InferlabError as e:
        print(f"    engine alone: not measured: {e}; the table shows floor and served only")
        return None, {"engine_alone": f"not measured: {e}"}
    write_json(out / RESULT_NAME, eb)
    steps = ", ".join(f"b={s.batch} {s.step_time_s * 1e3:.1f}" for s in eb.steps)
    line = (
        f"step ms {steps}; prefill of {eb.prefill.n_tokens} tokens {eb.prefill.mean_s:.3g} s; "
        f"noise {eb.noise_rel:.1%}; CPU {eb.cpu_fraction:.0%}"
    )
    print(f"    engine alone: {line}", flush=True)
    return eb, {"engine_alone": f"{line} ({RESULT_NAME})"}


def _extra(pr: Any, threads: int, cores: int) -> dict[str, Any]:
    """Facts the report shows beside the sweep: the core split and the probe's figures."""
    return {
        "server_threads": threads,
        "machine_cores": cores,
        "core_split": f"server {threads} thread(s), client the remaining {cores - threads} core(s)",
        "probe_read_bytes_per_s": pr.bandwidth.read_bytes_per_s,
        "probe_copy_bytes_per_s": pr.bandwidth.copy_bytes_per_s,
        "probe_fp32_flops_per_s": pr.flops.fp32_flops_per_s,
        "bandwidth_basis": "read rate: decode streams weights and KV in and writes ~nothing",
    }


def _sweep_config(args: argparse.Namespace, floor: Any, extra: dict[str, Any], engine: Any) -> Any:
    """The sweep as bench runs it (its address set once the server is up)."""
    from inferlab.bench.benchmark import BenchConfig
    from inferlab.load.spec import Level

    levels, requests, out_tokens = plan(args)
    return BenchConfig(
        url="",
        model=None,
        levels=[Level("concurrency", c) for c in levels],
        requests_per_level=requests,
        warmup=args.warmup,
        prompt_tokens=args.prompt_tokens,
        output_tokens=out_tokens,
        stall_factor=args.stall_factor,
        lag_threshold_s=args.lag_threshold,
        seed=args.seed,
        request_timeout_s=args.request_timeout,
        out_dir=args.out,
        floor=floor,
        command=["inferlab", *sys.argv[1:]],
        extra=extra,
        engine=engine,
        slo=demo_slo(args.slo, args.min_attainment),
    )


def _predict_first(cfg: Any, opts: Any, trace: Any, engine: Any, slo_given: bool) -> dict[str, Any]:
    """Before any request: the Poisson level at 70 % of the predicted capacity, the
    trace level, and every level predicted from the engine alone (printed)."""
    from inferlab.sim.predict import describe_source, make_predictor, poisson_level, predict_levels

    pr = make_predictor(engine, opts.parallel, opts.parallel * opts.ctx_per_slot, cfg.slo)
    cfg.extra["slo"] = slo_line(cfg.slo, slo_given)
    print(f"    {cfg.extra['slo']}", flush=True)
    preds: dict[str, Any] = {}
    if pr is not None:
        try:
            rate, how = poisson_level(pr, cfg.workload, max(cfg.levels, key=lambda x: x.value))
            cfg.levels.append(rate)
            print(f"    {how}", flush=True)
        except InferlabError as e:
            print(f"    no Poisson level: {e}")
    else:
        print("    no Poisson level and no prediction: the engine alone was not measured")
    with_trace_level(cfg, trace)
    if pr is not None:
        print(f"    predictions from {describe_source(pr.model, pr.knobs)}; all held out")
        preds, skipped = predict_levels(pr, cfg.workload)
        for line in [*skipped, *prediction_lines(preds)]:
            print(f"    {line}", flush=True)
    return preds


def _serve_and_sweep(
    args: argparse.Namespace, gguf: Path, floor: Any, extra: dict[str, Any], engine: Any = None
) -> Any:
    """Step 3: predict every level, then llama-server on all cores but one, the sweep."""
    from inferlab.console.sweep import execute
    from inferlab.engines.llama_server import LlamaServer, ServerOptions

    levels, requests, out_tokens = plan(args)
    cores, threads = extra["machine_cores"], extra["server_threads"]
    trace = demo_trace(args)
    opts = ServerOptions(
        gguf,
        None,
        parallel=max(levels),
        ctx_per_slot=max(args.prompt_tokens + out_tokens, trace_context_tokens(trace)) + 64,
        threads=threads,
        log_path=args.out / "llama-server.log",
    )
    print(
        f"3/4 predict + serve + sweep: llama-server with {threads} of {cores} cores (the client "
        f"keeps {cores - threads}), {max(levels)} slots; levels {levels}, {requests} requests "
        f"each, {args.prompt_tokens} prompt -> {out_tokens} forced output tokens, then a "
        f"Poisson level{trace_line(trace)}; server log {opts.log_path}",
        flush=True,
    )
    cfg = _sweep_config(args, floor, extra, engine)
    preds = _predict_first(cfg, opts, trace, engine, args.slo is not None)
    signals.kept(f"llama-server stopped; its log is {opts.log_path}")  # the sweep says more
    with LlamaServer(opts) as srv:
        extra["llama_server"] = " ".join(srv.command()[1:])
        cfg.url = srv.base_url
        profiled = _profile_step(cfg, srv.base_url, args.out, threads, opts)
        from inferlab.watch.background import BackgroundWatch

        # `inferlab watch` beside the sweep: live MBU on the progress bar, recorded for the report
        from inferlab.watch.derive import EngineFloor

        watched = EngineFloor.of(floor, engine)  # the engine alone: one verdict with the report
        with BackgroundWatch(srv.base_url, watched, args.out / "watch.jsonl", 0.5, 3.0) as w:
            result = execute(cfg, no_plots=True, hooks=_WatchServer(srv, w), wide=args.wide)
        searched = None
        if profiled is not None:
            from inferlab.commands.demo_profile import searched_max

            searched = searched_max(cfg, args.quick, _WatchServer(srv))[1]
    if preds or profiled is not None:  # the measured levels with their predictions and errors
        from inferlab.bench.benchmark import write_summary
        from inferlab.commands.demo_profile import compared

        result.summary, lines = compared(result.summary, preds, profiled, searched)
        write_summary(result.summary_path, result.summary)
        for line in lines:
            print("  " + line)
    return result


def _profile_step(cfg: Any, url: str, out: Path, threads: int, opts: Any) -> Any:
    """The served engine profiled, every level predicted from it (commands/demo_profile.py)."""
    from inferlab.commands.demo_profile import plan_from_profile

    ctx = opts.parallel * opts.ctx_per_slot
    return plan_from_profile(cfg, url, out, threads, opts.parallel, ctx)


def run(args: argparse.Namespace) -> int:
    from inferlab.commands.bench import check_sizes

    if args.gguf is not None and not args.gguf.is_file():
        raise InferlabError(f"--gguf {args.gguf}: no such file")
    args.prompt_tokens = _fixed(args.prompt_tokens, "--prompt-tokens")
    _, requests, out_tokens = plan(args)
    args.requests_per_level, args.output_tokens = requests, out_tokens
    check_sizes(args)
    # One run per folder; a demo refused or stopped before writing leaves nothing behind.
    with claim_run_folder(args.out or default_out(), args.overwrite, args.append_run) as out:
        args.out = out
        return _demo_in(args)


def _demo_in(args: argparse.Namespace) -> int:
    from inferlab.commands.report import render_run
    from inferlab.engines.bundled import smollm2_gguf_path
    from inferlab.report.reading import read_sweep

    levels, _, out_tokens = plan(args)  # the sizes run() settled
    cores = os.cpu_count() or 1
    pr = _probe(args.quick)
    gguf = args.gguf or smollm2_gguf_path()
    floor = _floor(gguf, args.prompt_tokens, out_tokens)
    threads = args.threads or max(1, cores - 1)
    engine, facts = engine_alone(args, gguf, threads, levels, out_tokens, args.out)
    result = _serve_and_sweep(args, gguf, floor, _extra(pr, threads, cores) | facts, engine)
    print("4/4 report")
    from inferlab.commands.report import render_watch_if_recorded

    render_watch_if_recorded(args.out)  # watch.png first, so report.html shows MBU over time
    for line in [*read_sweep(result.summary), *read_trace_level(result.summary)]:
        print("  " + line)
    report = render_run(args.out, result.summary)
    print(f"report: {report}")
    if args.strict and any(w.severity != "info" for w in result.summary.warnings):
        return 1
    return 0
