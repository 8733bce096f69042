"""`inferlab amdahl`: several non-overlapping optimisations, summed as new times."""

from __future__ import annotations

import argparse
import math

from inferlab.commands.flags.output import add_output, emit, table
from inferlab.physics.amdahl import amdahl, parse_parts


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("amdahl", help="overall speedup of FRACTION:SPEEDUP optimisations")
    p.add_argument("parts", nargs="+", help="e.g. 0.3:3 0.5:2 (30%% of the time made 3x faster)")
    add_output(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    a = amdahl(parse_parts(args.parts))
    d = {
        "parts": [
            {"fraction": p.fraction, "speedup": p.speedup, "new_time_fraction": p.new_time}
            for p in a.parts
        ],
        "untouched_fraction": a.untouched_fraction,
        "new_time_fraction": a.new_time,
        "speedup": a.speedup,
        "ceiling_speedup": a.ceiling,
    }
    rows = [(f"{p.fraction:g} made {p.speedup:g}x faster", f"-> {p.new_time:.4g}") for p in a.parts]
    rows += [
        ("untouched", f"{a.untouched_fraction:.4g}"),
        ("new time", f"{a.new_time:.4g} of the old"),
        ("overall speedup", f"{a.speedup:.4g}x"),
        (
            "ceiling (optimised parts free)",
            f"{a.ceiling:.4g}x"
            if math.isfinite(a.ceiling)
            else "unbounded: nothing is left untouched (null in --json)",
        ),
    ]
    terms = " + ".join(
        [f"{a.untouched_fraction:.4g}"] + [f"{p.fraction:g}/{p.speedup:g}" for p in a.parts]
    )
    explain = [
        f"new time = {terms} = {a.new_time:.4g}",
        f"speedup  = 1 / {a.new_time:.4g} = {a.speedup:.4g}x (speedups never add or multiply)",
        f"ceiling  = 1 / {a.untouched_fraction:.4g} = {a.ceiling:.4g}x",
    ]
    emit(args, d, table(rows), explain)
    return 0
