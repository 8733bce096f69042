"""The load flags, added in one place and read in one place, for bench, simulate and plan.

`add_load_flags(parser, defaults)` adds them; `load_from_args(args, defaults)` turns the
parsed values into a `Workload` (one clear error naming the flag for anything wrong).
Each command passes its own defaults (bench measures 64 requests a level, simulate runs
60 s of an open loop, plan searches rates and takes no levels).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from inferlab.commands.flags.names import said
from inferlab.errors import InferlabError
from inferlab.load.limits import MAX_REQUESTS, MAX_TOKENS
from inferlab.units import parse_duration, parse_rate

if TYPE_CHECKING:  # numpy loads when a command reads its load, not when the CLI starts
    from inferlab.load.spec import ArrivalProcess, Level
    from inferlab.load.workload import Prefix, TraceLoad, Workload

ARRIVAL_PROCESSES: tuple[ArrivalProcess, ...] = ("poisson", "gamma", "constant")

DEFAULT_GAMMA_SHAPE = 0.5  # --arrival gamma without --burstiness (simulate's former default)
DEFAULT_BLOCK_TOKENS = 512  # Mooncake's hash block


@dataclass(frozen=True, slots=True)
class LoadDefaults:
    """What a command assumes when a load flag is not given."""

    prompt_tokens: str = "32"
    output_tokens: str = "256"
    levels: bool = True  # --concurrency / --rate / --trace (plan searches rates itself)
    requests_per_level: int | None = 64  # None: open loop runs --duration
    duration_s: float | None = None
    concurrency: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    one_level: bool = False  # the command runs one level (or searches from START,HIGHEST)


def _positive_int(text: str) -> int:
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
    return value


def _rates(text: str) -> list[float]:
    bad = argparse.ArgumentTypeError(f"{text!r}: a rate must be positive, e.g. 4,8,16 or 5/s")
    try:
        values = [parse_rate(x.strip()) for x in text.split(",") if x.strip()]
    except (InferlabError, ValueError):
        raise bad from None
    if not values or not all(0 < v < math.inf for v in values):  # NaN fails too
        raise bad
    return values


def _ints(text: str) -> list[int]:
    try:
        values = [int(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write numbers like 1,2,4,8") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give positive numbers, e.g. 1,2,4,8")
    return values


def _seconds(text: str) -> float:
    try:
        return parse_duration(text)
    except InferlabError as e:
        raise argparse.ArgumentTypeError(said(e)) from None


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def add_load_flags(p: argparse.ArgumentParser, defaults: LoadDefaults = LoadDefaults()) -> None:
    """Lengths, arrivals, levels, traces, shared prefixes, conversations and the seed."""
    g = p.add_argument_group("load (the same flags on bench, simulate and plan)")
    forms = "N, uniform:LO:HI, normal:MEAN:SD, lognormal:MEDIAN:SIGMA or empirical:FILE"
    g.add_argument(
        "--prompt-tokens",
        metavar="DIST",
        default=defaults.prompt_tokens,
        help=f"whole prompt length, shared prefix included: {forms} ({defaults.prompt_tokens})",
    )
    g.add_argument(
        "--output-tokens",
        metavar="DIST",
        default=defaults.output_tokens,
        help=f"forced output length: {forms} ({defaults.output_tokens})",
    )
    g.add_argument(
        "--arrival",
        choices=ARRIVAL_PROCESSES,
        help="open-loop arrival process (poisson; gamma with --burstiness)",
    )
    g.add_argument(
        "--burstiness",
        "--gamma-shape",
        metavar="K",
        type=_number,
        help=f"gamma shape K: CV = 1/sqrt(K), < 1 burstier ({DEFAULT_GAMMA_SHAPE} with gamma)",
    )
    g.add_argument(
        "--seed", metavar="N", type=_positive_int, default=0, help="every draw reproducible (0)"
    )
    g.add_argument(
        "--prefix-groups",
        metavar="G",
        type=_positive_int,
        help="G shared system prompts (with --prefix-tokens)",
    )
    g.add_argument(
        "--prefix-tokens", metavar="P", type=_positive_int, help="each shared prompt's tokens"
    )
    g.add_argument(
        "--turns",
        metavar="N",
        type=_positive_int,
        help="conversations of N turns on the chat API; --prompt-tokens is each new message",
    )
    g.add_argument(
        "--think-time",
        metavar="T",
        type=_seconds,
        default=0.0,
        help="between a reply and the next turn (0)",
    )
    if defaults.levels:
        _add_level_flags(g, defaults)


def _add_load_kind_flags(g: argparse._ArgumentGroup, defaults: LoadDefaults) -> None:
    """--concurrency and --rate: one level (or a search's start) or a list of levels."""
    if defaults.one_level:
        search = "; with --find-max-load: START or START,HIGHEST"
        g.add_argument(
            "--concurrency", metavar="N", type=_ints, help=f"closed loop: N streams{search}"
        )
        g.add_argument(
            "--rate", metavar="R", type=_rates, help=f"open loop: R requests/s, e.g. 5/s{search}"
        )
        return
    levels = ",".join(str(c) for c in defaults.concurrency)
    g.add_argument(
        "--concurrency",
        metavar="LIST",
        type=_ints,
        help=f"closed-loop levels, streams, e.g. 1,2,4,8 ({levels} unless --rate or --trace)",
    )
    g.add_argument(
        "--rate", metavar="LIST", type=_rates, help="open-loop levels, requests/s: 4,8,16 or 5/s"
    )


def _add_level_flags(g: argparse._ArgumentGroup, defaults: LoadDefaults) -> None:
    _add_load_kind_flags(g, defaults)
    g.add_argument(
        "--requests-per-level",
        metavar="N",
        type=_positive_int,
        help=f"measured requests per level ({defaults.requests_per_level or '--duration'})",
    )
    g.add_argument(
        "--duration",
        metavar="T",
        type=_seconds,
        help="open loop: arrivals over this time, e.g. 60s",
    )
    g.add_argument(
        "--warmup",
        metavar="N",
        type=_positive_int,
        help="warm-up requests per level, sent before the measured ones and not counted "
        "(one per stream; 2 for an open-loop level)",
    )
    g.add_argument(
        "--trace",
        metavar="FILE|NAME",
        help="replay a trace: a file, azure-conv, azure-code, mooncake-conv",
    )
    g.add_argument(
        "--trace-window", metavar="START:END", help="START:END seconds of trace time, e.g. 0:60"
    )
    g.add_argument(
        "--trace-speed", metavar="X", type=_number, default=1.0, help="replay X times faster (1)"
    )
    g.add_argument(
        "--length-scale",
        metavar="F",
        type=_number,
        default=1.0,
        help="multiply every trace length (1)",
    )
    g.add_argument(
        "--output-scale",
        metavar="F",
        type=_number,
        help="multiply every trace output length by F instead (default: --length-scale): "
        "shorter prompts for a small machine, outputs long enough to decode",
    )
    g.add_argument(
        "--trace-block-tokens",
        metavar="N",
        type=_positive_int,
        default=DEFAULT_BLOCK_TOKENS,
        help=f"tokens per trace hash block ({DEFAULT_BLOCK_TOKENS})",
    )


def _arrival(args: argparse.Namespace) -> tuple[ArrivalProcess, float]:
    k = args.burstiness
    process: ArrivalProcess | None = next((a for a in ARRIVAL_PROCESSES if a == args.arrival), None)
    if k is not None and not 0 < k < math.inf:
        raise InferlabError(f"--burstiness (--gamma-shape) must be positive, e.g. 0.5 (got {k:g})")
    if process is None:
        process = "gamma" if k is not None else "poisson"
    if k is None:
        k = DEFAULT_GAMMA_SHAPE if process == "gamma" else 1.0
    return process, float(k)


def _prefix(args: argparse.Namespace) -> Prefix | None:
    from inferlab.load.workload import Prefix

    g, p = args.prefix_groups, args.prefix_tokens
    if g is None and p is None:
        return None
    if not g or not p:
        raise InferlabError("--prefix-groups G and --prefix-tokens P go together, both >= 1")
    if p >= MAX_TOKENS:
        raise InferlabError(f"--prefix-tokens: at most {MAX_TOKENS - 1}")
    return Prefix(g, p)


def levels_from(args: argparse.Namespace, defaults: LoadDefaults) -> tuple[Level, ...]:
    from inferlab.load.spec import Level

    if getattr(args, "trace", None):
        if args.rate or args.concurrency:
            raise InferlabError("--trace is one level of its own: drop --concurrency / --rate")
        return (Level("trace", 0.0, "trace"),)
    if args.rate and args.concurrency:
        raise InferlabError("give --concurrency or --rate, not both")
    if args.rate:
        if not all(0 < r < math.inf for r in args.rate):
            raise InferlabError("--rate must be positive and finite, e.g. 4,8,16 or 5/s")
        return tuple(Level("rate", r) for r in args.rate)
    return tuple(Level("concurrency", c) for c in (args.concurrency or defaults.concurrency))


def load_from_args(args: argparse.Namespace, defaults: LoadDefaults = LoadDefaults()) -> Workload:
    """The workload the flags describe; one clear InferlabError for anything wrong."""
    from inferlab.load.conversations import Conversation
    from inferlab.load.lengths import LengthDist
    from inferlab.load.spec import Level
    from inferlab.load.workload import Workload

    prompt = LengthDist.parse(args.prompt_tokens, "{prompt_tokens}", MAX_TOKENS)
    output = LengthDist.parse(args.output_tokens, "{output_tokens}", MAX_TOKENS)
    process, k = _arrival(args)
    prefix = _prefix(args)
    conv = Conversation(args.turns, args.think_time) if args.turns is not None else None
    if conv is not None and prefix is not None:
        raise InferlabError("--prefix-groups does not combine with --turns (history is shared)")
    if not defaults.levels:
        if conv is not None:
            raise InferlabError("--turns: plan searches single-turn rates; simulate one instead")
        return Workload(prompt, output, (), arrival=process, burstiness=k, seed=args.seed)
    levels = levels_from(args, defaults)
    trace = _trace(args) if args.trace else None
    if trace is not None:  # a trace level states its offered rate: rows over its span
        rows, span = trace.trace.rows, trace.trace.span_s
        levels = (Level("trace", (rows - 1) / span if span > 0 else 0.0, "trace"),)
    if trace is not None and (prefix is not None or conv is not None):
        raise InferlabError("--prefix-groups and --turns do not combine with --trace")
    requests, duration = args.requests_per_level, args.duration
    if duration is not None and not 0 < duration < math.inf:
        raise InferlabError("--duration must be positive and finite, e.g. 60s")
    closed = levels[0].kind == "concurrency"
    # (simulate's closed loop without a count sends users x --requests-per-user)
    if requests is None and duration is not None and closed and defaults.requests_per_level:
        raise InferlabError(
            "--duration ends open-loop (--rate) levels; a --concurrency level ends after "
            "--requests-per-level"
        )
    if requests is None and duration is None:
        requests, duration = defaults.requests_per_level, defaults.duration_s
    if requests is not None and not 1 <= requests <= MAX_REQUESTS:
        raise InferlabError(f"--requests-per-level: 1 to {MAX_REQUESTS:g}")
    return Workload(
        prompt,
        output,
        levels,
        requests_per_level=requests,
        duration_s=duration,
        arrival=process,
        burstiness=k,
        seed=args.seed,
        warmup=args.warmup,
        prefix=prefix,
        trace=trace,
        conversation=conv,
    )


def _trace(args: argparse.Namespace) -> TraceLoad:
    from inferlab.load.traces import parse_window, read_trace, shape_trace
    from inferlab.load.workload import TraceLoad

    window = parse_window(args.trace_window) if args.trace_window else None
    trace = read_trace(str(args.trace))
    shaped = shape_trace(
        trace,
        window,
        args.trace_speed,
        args.length_scale,
        args.trace_block_tokens,
        output_scale=args.output_scale,
    )
    return TraceLoad(shaped, str(args.trace))
