"""The highest load within an SLO, measured: bracket by doubling, then narrow by
monotone interpolation of the SLO margin, as vLLM's `bench sweep serve_sla` does.

The search is a small state machine (`MaxLoadSearch`: `values()` / `record()`), so
bench drives it from inside its event loop, and `simulate` and `plan` through `find_max_load`.
Each probe is one real level (a measurement or a simulation); the answer is the
highest level actually *measured* that passes, never an interpolated value.

Between the highest passing level `lo` and the lowest failing one `hi`, the next probe
is where the straight line through their margins (<= 0 passes) crosses zero: the
margin is monotone in load, and on a line through two points that is the monotone
(PCHIP) interpolant vLLM uses. A probe that would land on an end is moved one step
inside, and one that would barely shrink the bracket (in its outer quarters) is
replaced by its midpoint, so the bracket shrinks by a quarter at least every probe.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from inferlab.jsonrecord import JsonRecord, json_meta
from inferlab.slo.attainment import SloLevel

LoadKind = Literal["concurrency", "rate"]
Status = Literal["found", "levels_exhausted", "bound_not_found", "none_meets"]
DEFAULT_MAX_LEVELS = 8
RATE_RESOLUTION = 0.05  # a rate bracket narrower than 5 % is resolved
MARGIN_CLIP = 10.0  # an objective with no data (margin inf) still gives a line to follow


@dataclass(frozen=True, slots=True)
class Probe:
    """One level the search measured."""

    value: float
    level: SloLevel


@dataclass(frozen=True, slots=True)
class TriedLevel(JsonRecord):
    """A probe as summary.json keeps it (its full `slo` block is in that level)."""

    value: float
    passed: bool = field(metadata=json_meta(key="pass"))
    attainment: float
    goodput_requests_per_s: float
    binding_objective: str | None = field(metadata=json_meta(absent=None))
    binding: str | None = field(metadata=json_meta(absent=None))  # e.g. "tpot_p99: 52 ms > 50 ms"

    @classmethod
    def of(cls, p: Probe) -> TriedLevel:
        b, lv = p.level.binding, p.level
        return cls(
            p.value,
            lv.passed,
            lv.attainment,
            lv.goodput_requests_per_s,
            None if b is None else b.name,
            None if b is None else b.describe(lv.min_attainment),
        )


@dataclass(frozen=True, slots=True)
class MaxLoad(JsonRecord):
    """The `max_load` block: what the search found, and every level it tried, in order."""

    kind: LoadKind
    # the highest level that passed; None: none
    value: float | None = field(metadata=json_meta(absent=None))
    status: Status
    # what breaks above (or at best)
    binding_objective: str | None = field(metadata=json_meta(absent=None))
    message: str
    levels_tried: tuple[TriedLevel, ...]


def fmt_load(kind: LoadKind, value: float) -> str:
    return f"{int(value)}" if kind == "concurrency" else f"{value:.3g}/s"


@dataclass(frozen=True, slots=True)
class SearchSpec:
    """A search to run: its load, first and highest level, and probes at most. `upper_why`
    says what set `upper` when it is the most the load can reach (not a choice)."""

    kind: LoadKind
    start: float = 1.0
    upper: float = math.inf
    max_levels: int = DEFAULT_MAX_LEVELS
    upper_why: str = ""

    def begin(self) -> MaxLoadSearch:
        return MaxLoadSearch(self.kind, self.start, self.upper, self.max_levels, self.upper_why)


@dataclass(slots=True)
class MaxLoadSearch:
    """Bracket, then interpolate; at most `max_levels` probes, between `start` and `upper`."""

    kind: LoadKind
    start: float = 1.0
    upper: float = math.inf
    max_levels: int = DEFAULT_MAX_LEVELS
    upper_why: str = ""  # e.g. "20 requests per level keep at most 20 in flight"
    probes: list[Probe] = field(default_factory=list)

    def record(self, value: float, level: SloLevel) -> None:
        self.probes.append(Probe(value, level))

    def _bracket(self) -> tuple[Probe | None, Probe | None]:
        """(the highest passing probe, the lowest failing probe above it)"""
        passing = [p for p in self.probes if p.level.passed]
        lo = max(passing, key=lambda p: p.value, default=None)
        above = [
            p for p in self.probes if not p.level.passed and (lo is None or p.value > lo.value)
        ]
        return lo, min(above, key=lambda p: p.value, default=None)

    def _resolved(self, lo: float, hi: float) -> bool:
        if self.kind == "concurrency":
            return hi - lo <= 1
        return hi <= lo * (1 + RATE_RESOLUTION)

    def next_value(self) -> float | None:
        """The next load to measure, or None when the search is over."""
        if not self.probes:
            return self._snap(self.start)
        if len(self.probes) >= self.max_levels:
            return None
        lo, hi = self._bracket()
        if lo is None:
            return None  # the lowest level already fails
        if hi is None:
            if lo.value >= self.upper:
                return None
            return self._snap(min(lo.value * 2, self.upper))
        if self._resolved(lo.value, hi.value):
            return None
        return self._between(lo, hi)

    def values(self) -> Iterator[float]:
        """Each load to measure, asked for once the one before is recorded: the one loop
        that drives a search (bench's levels and the simulator's alike)."""
        while (value := self.next_value()) is not None:
            yield value

    def _snap(self, value: float) -> float:
        return float(math.floor(value)) if self.kind == "concurrency" else value

    def _between(self, lo: Probe, hi: Probe) -> float:
        m_lo = max(-MARGIN_CLIP, min(lo.level.margin, 0.0))
        m_hi = min(MARGIN_CLIP, max(hi.level.margin, 1e-9))
        x = lo.value + (hi.value - lo.value) * (-m_lo) / (m_hi - m_lo)
        mid = (lo.value + hi.value) / 2
        if self.kind == "rate":
            span = hi.value - lo.value
            # a root in the outer quarters shrinks the bracket little: bisect instead
            inside = lo.value + span / 4 <= x <= hi.value - span / 4
            return x if inside else mid
        x = round(x)
        # one step inside the bracket; never a probe that leaves it nearly as wide
        x = min(max(x, lo.value + 1), hi.value - 1)
        if hi.value - lo.value > 4 and not (lo.value + 2 <= x <= hi.value - 2):
            x = math.floor(mid)
        return float(x)

    def result(self) -> MaxLoad:
        lo, hi = self._bracket()
        tried = tuple(self.probes)
        if lo is None:
            return _none_meets(self.kind, tried)
        if hi is None:
            return _bound_not_found(self, lo, tried)
        b = hi.level.binding
        breaks = "" if b is None else f" breaks {b.describe(hi.level.min_attainment)}"
        status: Status = "found" if self._resolved(lo.value, hi.value) else "levels_exhausted"
        msg = (
            f"max {self.kind} within the SLO: {fmt_load(self.kind, lo.value)} "
            f"({fmt_load(self.kind, hi.value)}{breaks})"
        )
        if status == "levels_exhausted":
            msg += (
                f"; loads between them were not tried within --search-max-levels "
                f"{self.max_levels}: raise it to narrow the answer"
            )
        return MaxLoad(
            self.kind, lo.value, status, None if b is None else b.name, msg, _kept(tried)
        )


def _kept(tried: tuple[Probe, ...]) -> tuple[TriedLevel, ...]:
    return tuple(TriedLevel.of(p) for p in tried)


def _none_meets(kind: LoadKind, tried: tuple[Probe, ...]) -> MaxLoad:
    best = min(tried, key=lambda p: p.level.margin) if tried else None
    if best is None:
        return MaxLoad(kind, None, "none_meets", None, "no level was measured", ())
    lowest = min(tried, key=lambda p: p.value)
    b = best.level.binding
    why = "" if b is None else f": {b.describe(best.level.min_attainment)}"
    msg = (
        f"no level meets the SLO: the lowest tried, {kind} {fmt_load(kind, lowest.value)}, "
        f"already fails; the best was {kind} {fmt_load(kind, best.value)} "
        f"(attainment {best.level.attainment:.0%}{why})"
    )
    return MaxLoad(kind, None, "none_meets", None if b is None else b.name, msg, _kept(tried))


def _bound_not_found(search: MaxLoadSearch, lo: Probe, tried: tuple[Probe, ...]) -> MaxLoad:
    raise_what = (
        f"--search-max-levels (now {search.max_levels})"
        if lo.value < search.upper
        else f"the highest load searched ({fmt_load(search.kind, search.upper)})"
    )
    msg = (
        f"max {search.kind} within the SLO: at least {fmt_load(search.kind, lo.value)}; "
        f"every level tried passed, so the bound was not found: raise {raise_what}"
    )
    if lo.value >= search.upper and search.upper_why:
        msg = (
            f"max {search.kind} within the SLO: at least {fmt_load(search.kind, lo.value)}; "
            f"no higher level was tried: {search.upper_why}"
        )
    b = lo.level.binding
    return MaxLoad(
        search.kind, lo.value, "bound_not_found", None if b is None else b.name, msg, _kept(tried)
    )


def find_max_load(measure: Callable[[float], SloLevel], spec: SearchSpec) -> MaxLoad:
    """Run the search with `measure(load) -> SloLevel` (one real level per call)."""
    search = spec.begin()
    for value in search.values():
        search.record(value, measure(value))
    return search.result()
