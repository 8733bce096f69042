"""`inferlab demo`: probe, serve SmolLM2 locally, sweep, report (the steps: inferlab.demo)."""

from __future__ import annotations

import argparse
import sys

from inferlab.commands.flags.bench_config import check_sizes
from inferlab.commands.flags.demo import add_demo_args
from inferlab.demo.config import DemoConfig, TraceChoice, planned_sizes
from inferlab.demo.run_demo import run_demo
from inferlab.errors import InferlabError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="probe, serve SmolLM2 locally, sweep, report (a few minutes)")
    add_demo_args(p)
    p.set_defaults(run=run)


def demo_config(args: argparse.Namespace) -> DemoConfig:
    """The flags read into one DemoConfig, each refused in one line before any folder."""
    if args.gguf is not None and not args.gguf.is_file():
        raise InferlabError(f"--gguf {args.gguf}: no such file")
    levels, requests, out_tokens = planned_sizes(
        args.quick, args.concurrency, args.requests_per_level, args.output_tokens
    )
    check_sizes(args)
    trace = TraceChoice(
        args.no_trace,
        args.trace,
        args.trace_window,
        args.trace_speed,
        args.length_scale,
        args.trace_block_tokens,
        args.output_scale,
    )
    return DemoConfig(
        quick=args.quick,
        gguf=args.gguf,
        threads=args.threads,
        engine_bench=not args.no_engine_bench,
        levels=levels,
        requests_per_level=requests,
        prompt_tokens=args.prompt_tokens,
        output_tokens=out_tokens,
        warmup=args.warmup,
        seed=args.seed,
        request_timeout_s=args.request_timeout,
        stall_factor=args.stall_factor,
        lag_threshold_s=args.lag_threshold,
        trace=trace,
        slo=args.slo,
        min_attainment=args.min_attainment,
        out=args.out,
        overwrite=args.overwrite,
        append_run=args.append_run,
        wide=args.wide,
        strict=args.strict,
        command=("inferlab", *sys.argv[1:]),
    )


def run(args: argparse.Namespace) -> int:
    return run_demo(demo_config(args))
