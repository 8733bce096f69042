"""Amdahl's law for several non-overlapping optimisations: add new times, never speedups."""

from __future__ import annotations

from dataclasses import dataclass

from inferlab.errors import InferlabError

MIN_SPEEDUP = 1e-9
MAX_SPEEDUP = 1e12


@dataclass(frozen=True, slots=True)
class Part:
    fraction: float  # share of the original time
    speedup: float  # how much faster this part becomes

    @property
    def new_time(self) -> float:
        return self.fraction / self.speedup


@dataclass(frozen=True, slots=True)
class Amdahl:
    parts: tuple[Part, ...]
    untouched_fraction: float
    new_time: float  # as a fraction of the old time
    speedup: float
    ceiling: float  # speedup if every optimised part took no time at all


def amdahl(parts: list[tuple[float, float]]) -> Amdahl:
    if not parts:
        raise InferlabError("give at least one FRACTION:SPEEDUP pair, e.g. 0.3:3")
    ps = tuple(Part(f, s) for f, s in parts)
    for p in ps:
        if not 0.0 <= p.fraction <= 1.0:
            raise InferlabError(f"fraction {p.fraction} is not between 0 and 1")
        # Bounded both ways so every new time stays finite (a 1e-320x "speedup" overflows).
        if not MIN_SPEEDUP <= p.speedup <= MAX_SPEEDUP:
            raise InferlabError(
                f"speedup {p.speedup:g} must be between {MIN_SPEEDUP:g} and {MAX_SPEEDUP:g}"
            )
    total = sum(p.fraction for p in ps)
    if total > 1.0 + 1e-9:
        raise InferlabError(
            f"the fractions add up to {total:g} > 1: optimisations must not overlap "
            "(each is a share of the same original time)"
        )
    untouched = max(0.0, 1.0 - total)
    new_time = untouched + sum(p.new_time for p in ps)
    ceiling = 1.0 / untouched if untouched > 0 else float("inf")
    return Amdahl(ps, untouched, new_time, 1.0 / new_time, ceiling)


def parse_parts(items: list[str]) -> list[tuple[float, float]]:
    """'0.3:3' -> (0.3, 3.0); a percentage '30%:3' works too."""
    out = []
    for item in items:
        try:
            f, s = item.split(":")
            frac = float(f[:-1]) / 100 if f.endswith("%") else float(f)
            out.append((frac, float(s.rstrip("x"))))
        except ValueError as e:
            raise InferlabError(
                f"cannot read {item!r}: write FRACTION:SPEEDUP, e.g. 0.3:3 or 30%:3"
            ) from e
    return out
