"""--slo, --min-attainment, --find-max-load and --search-max-levels: one flag group for
`bench` and `simulate`, parsed once (slo/grammar.py) and refused with one line."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from inferlab.commands.flags.argtypes import real, whole
from inferlab.commands.flags.names import said
from inferlab.errors import InferlabError

if TYPE_CHECKING:
    from inferlab.slo.grammar import Slo
    from inferlab.slo.search import LoadKind, MaxLoadSearch, SearchSpec

MAX_SEARCH_LEVELS = 64


def slo_text(text: str) -> str:
    """An argparse type: the SLO is read (and refused) before anything runs."""
    from inferlab.slo.grammar import parse_slo

    try:
        parse_slo(text)
    except InferlabError as e:
        raise argparse.ArgumentTypeError(said(e).removeprefix("--slo: ")) from None
    return text


def add_slo_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("SLO: goodput, attainment and the highest load within it")
    g.add_argument(
        "--slo",
        type=slo_text,
        help="objectives, per request (ttft=500ms,tpot=50ms,e2e=20s,itl_max=1s,ttfo=2s) "
        "and per level (ttft_p99=1s,tpot_p90=40ms)",
    )
    g.add_argument(
        "--min-attainment",
        type=real(0.0, 1.0, above=True),
        default=0.9,
        help="share of requests that must meet every per-request objective for a level "
        "to pass (0.9)",
    )
    g.add_argument(
        "--find-max-load",
        choices=["concurrency", "rate"],
        help="search the highest load within --slo: bracket by doubling, then interpolate; "
        "--concurrency/--rate give the first load (and a second value, the highest)",
    )
    g.add_argument(
        "--search-max-levels",
        type=whole(1, MAX_SEARCH_LEVELS),
        default=8,
        help="levels the search may measure (8)",
    )


def slo_from(args: argparse.Namespace) -> Slo | None:
    from inferlab.slo.grammar import parse_slo

    if args.find_max_load and not args.slo:
        raise InferlabError("--find-max-load needs --slo, e.g. --slo tpot_p99=50ms")
    return parse_slo(args.slo, args.min_attainment) if args.slo else None


def search_spec(
    args: argparse.Namespace, given: list[float] | None = None, upper: float = math.inf
) -> SearchSpec | None:
    """The search, starting at the first value given for its load (--concurrency or --rate;
    1 by default) and stopping at the second (else `upper`). A closed loop of N requests
    per level keeps at most N in flight: the search stops there, and says so."""
    from inferlab.slo.search import SearchSpec

    kind: LoadKind | None = args.find_max_load
    if kind is None:
        return None
    if given is None:
        given = [float(v) for v in (getattr(args, kind) or [])]
    values = sorted(given or [1.0])
    if len(values) > 2:
        raise InferlabError(
            f"--find-max-load {kind}: give --{kind} as START or START,HIGHEST, not a list"
        )
    start, top = values[0], (values[1] if len(values) == 2 else upper)
    n = getattr(args, "requests_per_level", None)
    if kind == "concurrency" and n is not None and n < top:
        if start > n:
            raise InferlabError(
                f"--find-max-load concurrency starts at {start:g} streams, but "
                f"--requests-per-level {n} keeps at most {n} requests in flight: raise it"
            )
        why = f"--requests-per-level {n} keeps at most {n} requests in flight: raise it"
        return SearchSpec(kind, start, float(n), args.search_max_levels, why)
    return SearchSpec(kind, start, top, args.search_max_levels)


def search_from(
    args: argparse.Namespace, given: list[float] | None, upper: float
) -> MaxLoadSearch | None:
    """The search as bench drives it, level by level (`search_spec`)."""
    spec = search_spec(args, given, upper)
    return spec.begin() if spec is not None else None
