# /// script
# requires-python = ">=3.11"
# dependencies = []
# ///
"""Amdahl calculator for several non-overlapping optimisations (deck 01, card Q7).

    uv run exercises/03_04_amdahl.py 0.3:3 0.5:2

Each argument is FRACTION:SPEEDUP: that share of the original step time made
that many times faster. The parts must not overlap, so their fractions add up
to at most 1. Work with times, never with speedups: the untouched share stays,
each optimised share shrinks to fraction / speedup, and the new times add up.
"""

from __future__ import annotations

import sys


def parse(arg: str) -> tuple[float, float]:
    try:
        f, s = arg.split(":")
        frac = float(f[:-1]) / 100 if f.endswith("%") else float(f)
        return frac, float(s.rstrip("x"))
    except ValueError:
        raise SystemExit(
            f"cannot read {arg!r}: write FRACTION:SPEEDUP, e.g. 0.3:3 or 30%:3"
        ) from None


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    parts = [parse(a) for a in argv]
    for frac, speedup in parts:
        if not 0 <= frac <= 1 or speedup <= 0:
            print(f"error: fraction {frac} must be in [0, 1] and speedup {speedup} > 0")
            return 2
    total = sum(f for f, _ in parts)
    if total > 1 + 1e-9:
        print(f"error: the fractions add up to {total:g} > 1; optimisations must not overlap")
        return 2
    untouched = 1 - total
    print(f"untouched part        {untouched:.4g}")
    for frac, speedup in parts:
        print(f"{frac:g} made {speedup:g}x faster -> {frac / speedup:.4g}")
    new_time = untouched + sum(f / s for f, s in parts)
    terms = " + ".join([f"{untouched:.4g}"] + [f"{f:g}/{s:g}" for f, s in parts])
    print(f"new time fraction     {terms} = {new_time:.4g}")
    print(f"overall speedup       1 / {new_time:.4g} = {1 / new_time:.4g}x")
    if untouched > 0:
        print(f"ceiling (parts free)  1 / {untouched:.4g} = {1 / untouched:.4g}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
