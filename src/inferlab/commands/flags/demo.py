"""The demo's flags, with the demo's own defaults (bench has more; commands/demo.py reads
them into a DemoConfig)."""

from __future__ import annotations

import argparse
from pathlib import Path

from inferlab.commands.flags.argtypes import TIME, int_list, real, whole
from inferlab.commands.flags.bench import add_honesty_args, add_run_folder_args
from inferlab.commands.flags.load import DEFAULT_BLOCK_TOKENS
from inferlab.commands.flags.slo import slo_text
from inferlab.console.predict_text import SLO_WHY
from inferlab.demo.slo import DEMO_SLO
from inferlab.demo.trace import DEMO_LENGTH_SCALE, DEMO_OUTPUT_SCALE


def add_demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="under 2 minutes: fewer levels and tokens")
    p.add_argument("--gguf", type=Path, help="serve this GGUF instead of the bundled SmolLM2")
    p.add_argument("--threads", type=whole(1, 4096), help="server threads (all cores but one)")
    p.add_argument(
        "--no-engine-bench", action="store_true", help="skip the engine-alone measurement"
    )
    add_demo_sweep_args(p)
    add_trace_flags(p)
    add_slo_flags(p)


def add_demo_sweep_args(p: argparse.ArgumentParser) -> None:
    """The sweep's flags the demo reads, with the demo's own defaults (bench has more)."""
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
        help="measured requests per level (16; 8 with --quick)",
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


def add_trace_flags(p: argparse.ArgumentParser) -> None:
    """The replay's flags, with the demo's own defaults."""
    t = p.add_argument_group("the replay of real traffic (last level)")
    t.add_argument(
        "--no-trace", action="store_true", help="skip the replay of real traffic (azure-conv)"
    )
    t.add_argument("--trace", metavar="FILE|NAME", help="the trace (azure-conv)")
    t.add_argument(
        "--trace-window", metavar="START:END", help="seconds of trace time (0:30; 0:10 quick)"
    )
    t.add_argument(
        "--trace-speed",
        metavar="X",
        type=real(0.0, 1e6, above=True),
        default=1.0,
        help="replay X times faster (1)",
    )
    t.add_argument(
        "--length-scale",
        metavar="F",
        type=real(0.0, 1e6, above=True),
        help=f"multiply every trace length ({DEMO_LENGTH_SCALE} for azure-conv, else 1)",
    )
    t.add_argument(
        "--output-scale",
        metavar="F",
        type=real(0.0, 1e6, above=True),
        help=f"multiply every trace output length instead ({DEMO_OUTPUT_SCALE} for "
        "azure-conv, else --length-scale)",
    )
    t.add_argument(
        "--trace-block-tokens",
        metavar="N",
        type=whole(1, 10**6),
        default=DEFAULT_BLOCK_TOKENS,
        help=f"tokens per trace hash block ({DEFAULT_BLOCK_TOKENS})",
    )


def add_slo_flags(p: argparse.ArgumentParser) -> None:
    """--slo and --min-attainment, as bench reads them; the demo has a default SLO."""
    p.add_argument(
        "--slo",
        type=slo_text,
        help=f"objectives for goodput, predicted and measured ({DEMO_SLO}: {SLO_WHY})",
    )
    p.add_argument(
        "--min-attainment",
        type=real(0.0, 1.0, above=True),
        default=0.9,
        help="share of requests within the SLO for a level to pass (0.9)",
    )
