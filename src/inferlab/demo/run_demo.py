"""The demo's one entry call: claim the run folder, run the four steps, report; the exit code."""

from __future__ import annotations

import os
from pathlib import Path

from inferlab import signals
from inferlab.demo.config import DemoConfig
from inferlab.demo.speed import engine_speed_lines, measured_alone
from inferlab.demo.steps import floor, machine_facts, probe
from inferlab.demo.sweep import serve_and_sweep, server_options
from inferlab.demo.trace import demo_trace, read_trace_level
from inferlab.metrics.runfolder import claim_run_folder, default_out


def run_demo(cfg: DemoConfig) -> int:
    """The whole demo in one folder: 0, or 1 with --strict and a warning."""

    # One run per folder; a demo refused or stopped before writing leaves nothing behind.
    with claim_run_folder(cfg.out or default_out(), cfg.overwrite, cfg.append_run) as out:
        return _demo_in(cfg, out)


def _demo_in(cfg: DemoConfig, out: Path) -> int:
    from inferlab.console.report_view import render_watch_if_recorded
    from inferlab.engines.bundled import smollm2_gguf_path
    from inferlab.engines.llama_server import LlamaServer
    from inferlab.report.inputs import render_run
    from inferlab.report.reading import read_sweep

    cores = os.cpu_count() or 1
    pr = probe(cfg.quick)
    gguf = cfg.gguf or smollm2_gguf_path()
    fl = floor(gguf, cfg.prompt_tokens, cfg.output_tokens)
    threads = cfg.threads or max(1, cores - 1)
    trace = demo_trace(cfg.trace, cfg.quick)
    opts = server_options(cfg, out, gguf, threads, trace)
    signals.kept(f"llama-server stopped; its log is {opts.log_path}")  # the sweep says more
    # The server is up, idle, while the engine is measured alone: the drift canary reads
    # the machine's speed on it just before and after (demo/speed.py).
    with LlamaServer(opts) as srv:
        engine, facts = measured_alone(cfg, gguf, threads, out, srv.base_url)
        extra = machine_facts(pr, threads, cores) | facts
        result = serve_and_sweep(cfg, out, srv, trace, fl, extra, engine)
    print("4/4 report")
    render_watch_if_recorded(out)  # watch.png first, so report.html shows MBU over time
    reading = [*read_sweep(result.summary), *engine_speed_lines(result.summary)]
    for line in [*reading, *read_trace_level(result.summary)]:
        print("  " + line)
    report = render_run(out, result.summary)
    print(f"report: {report}")
    if cfg.strict and any(w.severity != "info" for w in result.summary.warnings):
        return 1
    return 0
