"""The demo's last level: real traffic, a slice of the Azure conversation trace replayed.

After the concurrency sweep, the demo replays the first 30 s (10 s with --quick) of
the Azure LLM inference conversation trace (Patel et al., "Splitwise", ISCA 2024,
CC-BY 4.0) at its own instants, prompts scaled by 0.05 (--length-scale) so the
trace's GPU-sized prompts fit the bundled CPU model, outputs by 0.1 (--output-scale) so
a reply has a TPOT over ~9 tokens: mixed lengths and bursts; on a loaded 2-core
machine 20 s of it took 40 s to serve (the server falls behind the bursts: that is what
the level shows), so 30 s takes about a minute. --trace, --trace-window, --trace-speed,
--length-scale and --output-scale choose another slice; --no-trace skips the level.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inferlab.bench.benchmark import BenchConfig
    from inferlab.demo.config import TraceChoice
    from inferlab.load.workload import TraceLoad
    from inferlab.summary import RunSummary

DEMO_TRACE = "azure-conv"
DEMO_WINDOW, DEMO_WINDOW_QUICK = "0:30", "0:10"  # 59 and 13 requests
DEMO_LENGTH_SCALE = 0.05
DEMO_OUTPUT_SCALE = 0.1  # outputs of ~9 tokens (x0.05: ~4, a TPOT over 3 gaps)


def demo_trace(choice: TraceChoice, quick: bool) -> TraceLoad | None:
    """The slice the demo replays, shaped by the trace flags or the demo's defaults."""
    if choice.skip:
        return None
    from inferlab.load.traces import parse_window, read_trace, shape_trace
    from inferlab.load.workload import TraceLoad

    name = choice.name or DEMO_TRACE
    window = choice.window or (DEMO_WINDOW_QUICK if quick else DEMO_WINDOW)
    scale, out = choice.length_scale, choice.output_scale
    if scale is None and not choice.name:  # the demo's own slice
        scale, out = DEMO_LENGTH_SCALE, DEMO_OUTPUT_SCALE if out is None else out
    scale = 1.0 if scale is None else scale
    shaped = shape_trace(
        read_trace(name), parse_window(window), choice.speed, scale, choice.block_tokens, out
    )
    return TraceLoad(shaped, name)


def trace_context_tokens(trace: TraceLoad | None) -> int:
    """Tokens a server slot needs for the longest replayed request."""
    if trace is None or not trace.trace.rows:
        return 0
    return int((trace.trace.prompt_tokens + trace.trace.output_tokens).max())


def with_trace_level(cfg: BenchConfig, trace: TraceLoad | None) -> None:
    """Add the replay to the sweep: one more level, after the concurrency levels."""
    if trace is None:
        return
    from inferlab.load.spec import Level

    rows, span = trace.trace.rows, trace.trace.span_s
    level = Level("trace", (rows - 1) / span if span > 0 else 0.0, "trace")
    cfg.load = dataclasses.replace(cfg.load, levels=(*cfg.load.levels, level), trace=trace)


def trace_line(trace: TraceLoad | None) -> str:
    return "" if trace is None else f"; then real traffic: {trace.trace.describe()}"


def read_trace_level(summary: RunSummary) -> list[str]:
    """One sentence on the replayed traffic, beside the sweep's reading."""
    lv = next((x for x in summary.levels if x.label == "trace"), None)
    if lv is None or not lv.ttft_s.n:
        return []
    ms = 1e3
    lag = lv.schedule_lag_s
    kept = f", sent within {lag.p99 * ms:.1f} ms of schedule (p99)" if lag and lag.p99 else ""
    return [
        f"Real traffic: {lv.requests_ok} of {lv.requests_measured} requests of mixed lengths "
        f"at {lv.offered_rate_per_s or 0:.2g} req/s{kept}: TTFT p50 "
        f"{(lv.ttft_s.p50 or 0) * ms:.0f} ms, p99 {(lv.ttft_s.p99 or 0) * ms:.0f} ms; TPOT "
        f"p50 {(lv.tpot_s.p50 or 0) * ms:.1f} ms. Bursts queue: compare its TTFT tail with "
        "the closed-loop levels'."
    ]
