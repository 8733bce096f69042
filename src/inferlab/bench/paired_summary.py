"""A paired run's summary.json: each endpoint's levels, and B against A per block pair.

Each endpoint's levels are summarised as a single-URL sweep's are (bench/benchmark.py's
build_summary over all its blocks of the level, labelled "<endpoint> <level>"), so the
sweep table, the plots and `report` read them unchanged. Beside them, `paired`: per level
and quantity the ratio B/A of each round's blocks, its interval, verdict and the smallest
change the run could have found (metrics/paired.py).

The machine canary after each block is a covariate of the pairs only where both
endpoints' readings were of the same cores: the fit's estimate is B/A where ln(machine
B/A) is 0, which the balanced order makes its mean only when the two read one machine
(two servers on other cores, or one behind a proxy whose process the canary finds, read
apart by their cores' own speeds). Else no fit, and the quantity says why.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from inferlab.bench.benchmark import BenchConfig, RunState, build_summary
from inferlab.bench.blocks import DEFAULT_BLOCK_REQUESTS, LevelBlocks, side_level
from inferlab.bench.runner import LevelRun
from inferlab.metrics.checks import warning
from inferlab.metrics.level_summary import summarize_level
from inferlab.metrics.paired import METHOD, QuantityBlocks, paired_quantity
from inferlab.summary import (
    LevelSummary,
    PairedComparison,
    PairedEndpoint,
    PairedLevel,
    PairedQuantity,
    PairedRun,
    RunSummary,
    RunWarning,
)

# The quantities compared, each read from a level's (or a block's) summary.
QUANTITIES: tuple[tuple[str, Callable[[LevelSummary], float | None]], ...] = (
    ("tpot_s.p50", lambda s: s.tpot_s.p50),
    ("ttft_s.p50", lambda s: s.ttft_s.p50),
    ("output_tokens_per_s_total", lambda s: s.output_tokens_per_s_total or None),
)


@dataclass(slots=True)
class Side:
    """One endpoint of a paired run: its label and its own sweep state (probe, model,
    slots, warnings, and every block it ran, as LevelRuns)."""

    label: str
    state: RunState


@dataclass(slots=True)
class PairedProgress:
    """What a paired run knows so far: its endpoints, the levels begun, its own notes."""

    cfg: BenchConfig
    sides: list[Side]
    levels: list[LevelBlocks]
    warnings: list[RunWarning]
    interrupted: bool = False


def paired_summary(p: PairedProgress) -> RunSummary:
    """The run's summary: the baseline's run block, every endpoint's levels ("base c=1",
    "new c=1", "base c=2", ...), their warnings (a run-wide one named by its endpoint),
    and the paired comparisons."""
    per_side = [build_summary(_blocks_view(side)) for side in p.sides]
    by_label = {lv.label: lv for s in per_side for lv in s.levels}
    levels = [
        by_label[label]
        for lb in p.levels
        for side in p.sides
        if (label := side_level(lb.level, side.label).label) in by_label
    ]
    warns = list(p.warnings)
    for side, s in zip(p.sides, per_side, strict=True):
        warns += [_named(side.label, w) for w in s.warnings if _named(side.label, w) not in warns]
    paired = PairedRun(
        method=METHOD,
        block_requests_per_stream=_block_requests(p.cfg),
        endpoints=tuple(_endpoint(side, s) for side, s in zip(p.sides, per_side, strict=True)),
        levels=tuple(_paired_level(p, lb, by_label, _family(p)) for lb in p.levels),
    )
    return dataclasses.replace(
        per_side[0],
        interrupted=p.interrupted,
        levels=tuple(levels),
        warnings=tuple(warns),
        paired=paired,
    )


def _block_requests(cfg: BenchConfig) -> int:
    return cfg.paired.block_requests if cfg.paired is not None else DEFAULT_BLOCK_REQUESTS


def _blocks_view(side: Side) -> RunState:
    """The endpoint's state with its blocks of a level numbered as that level's repeats
    (its first block 0, ...): its level summary then pools them as --repeat pools runs,
    statistics over every block's requests, rates over the blocks' windows added (the
    other endpoints' blocks ran between them), intervals over blocks and requests."""
    count: dict[str, int] = {}
    runs = []
    for run in side.state.runs:
        k = count[run.level.label] = count.get(run.level.label, -1) + 1
        runs.append(dataclasses.replace(run, repeat=k))
    return dataclasses.replace(side.state, runs=runs)


def _named(label: str, w: RunWarning) -> RunWarning:
    """A run-wide warning of one endpoint says whose it is; a level's names it already."""
    if w.level != "run" or w.message.startswith(f"{label}: "):
        return w
    return dataclasses.replace(w, message=f"{label}: {w.message}")


def _endpoint(side: Side, s: RunSummary) -> PairedEndpoint:
    return PairedEndpoint(
        label=side.label, url=side.state.cfg.url, kind=s.server.kind, model=s.server.model
    )


def _block_stats(p: PairedProgress, lb: LevelBlocks, side: Side) -> dict[int, LevelSummary]:
    """Each block of the endpoint at this level, summarised alone, by its round."""
    label = side_level(lb.level, side.label).label
    k = p.cfg.stall_factor
    return {
        lb.round_of(run.block): summarize_level(
            label, lb.level.summary_kind, lb.level.value, run.records, k
        )
        for run in _blocks_run(lb, side)
        if run.block is not None
    }


def _blocks_run(lb: LevelBlocks, side: Side) -> list[LevelRun]:
    """The endpoint's blocks of this level, as they ran."""
    label = side_level(lb.level, side.label).label
    return [r for r in side.state.runs if r.level.label == label and r.block is not None]


def _machine_ms(lb: LevelBlocks, side: Side) -> dict[int, float]:
    """The machine canary after each of the endpoint's blocks of this level, by round."""
    return {
        lb.round_of(run.block): run.machine_after.machine_ms
        for run in _blocks_run(lb, side)
        if run.block is not None and run.machine_after is not None
    }


def _machine_cores(lb: LevelBlocks, side: Side) -> set[tuple[int, ...]]:
    """The cores the endpoint's machine canary read at this level."""
    return {r.machine_after.cores for r in _blocks_run(lb, side) if r.machine_after is not None}


@dataclass(frozen=True, slots=True)
class _Blocks:
    """One endpoint at one level: its summary over every block, each block's by round, and
    the machine canary after each block by round."""

    label: str
    whole: LevelSummary | None
    rounds: dict[int, LevelSummary]
    machine: dict[int, float]
    cores: set[tuple[int, ...]]

    def other_cores(self, base: _Blocks) -> str | None:
        """Why the two sides' machine readings are not one machine's, or None."""
        if not self.machine or not base.machine or self.cores == base.cores:
            return None
        return (
            f"not fitted: {base.label}'s machine canary read cores {sorted(base.cores)} and "
            f"{self.label}'s {sorted(self.cores)}, so their ratio is not 1 on average"
        )

    def machine_against(self, base: _Blocks, rounds: list[int]) -> tuple[float | None, ...] | None:
        """ln(machine ms after this block / after the base's) per round; None with no
        readings on either side, or readings of other cores (module doc)."""
        if not self.machine or not base.machine or self.other_cores(base):
            return None
        return tuple(
            math.log(self.machine[r] / base.machine[r])
            if r in self.machine and r in base.machine
            else None
            for r in rounds
        )


def _family(p: PairedProgress) -> int:
    """The run's comparisons: levels x endpoints against the baseline x quantities."""
    return len(p.levels) * (len(p.sides) - 1) * len(QUANTITIES)


def _comparison(base: _Blocks, other: _Blocks, rounds: int, family: int) -> PairedComparison:
    """`other` against `base` over the rounds both ran a block in, per quantity, one of
    the run's `family` comparisons."""
    both = [r for r in range(rounds) if r in base.rounds and r in other.rounds]
    machine = other.machine_against(base, both)

    def quantity(name: str, get: Callable[[LevelSummary], float | None]) -> PairedQuantity:
        return paired_quantity(
            QuantityBlocks(
                name,
                get(base.whole) if base.whole is not None else None,
                get(other.whole) if other.whole is not None else None,
                tuple(get(base.rounds[r]) for r in both),
                tuple(get(other.rounds[r]) for r in both),
                machine,
                other.other_cores(base),
            ),
            family,
        )

    return PairedComparison(
        baseline=base.label,
        endpoint=other.label,
        block_pairs=len(both),
        quantities=tuple(quantity(name, get) for name, get in QUANTITIES),
    )


def _paired_level(
    p: PairedProgress, lb: LevelBlocks, by_label: dict[str, LevelSummary], family: int
) -> PairedLevel:
    """The level's block order and each endpoint against the first, per quantity."""
    sides = [
        _Blocks(
            side.label,
            by_label.get(side_level(lb.level, side.label).label),
            _block_stats(p, lb, side),
            _machine_ms(lb, side),
            _machine_cores(lb, side),
        )
        for side in p.sides
    ]
    after = {
        run.block: run.machine_after.machine_ms
        for side in p.sides
        for run in _blocks_run(lb, side)
        if run.machine_after is not None
    }
    return PairedLevel(
        level=lb.level.label,
        requests_per_block=lb.plan.per_block,
        block_order=tuple(p.sides[i].label for i in lb.order),
        comparisons=tuple(_comparison(sides[0], s, lb.plan.rounds, family) for s in sides[1:]),
        machine_ms=tuple(after.get(i) for i in range(len(lb.order))) if after else None,
    )


def paired_note(cfg: BenchConfig) -> RunWarning:
    """Said once per paired run: what it does, and what it leaves out and why."""
    labels = cfg.paired.labels if cfg.paired is not None else ()
    return warning(
        "paired_run",
        "run",
        "info",
        f"paired run of {', '.join(labels)}: each level in blocks of {_block_requests(cfg)} "
        "request(s) per stream alternating the endpoints in a randomized, order-balanced "
        "order, one endpoint loaded at a time; each endpoint's level holds its blocks as its "
        "repeats; no drift canary and no /metrics scrape (pairing in time answers the "
        "machine's drift); the machine canary after each block (unless --no-canary), a "
        "fitted covariate of the pairs' ratios",
    )
