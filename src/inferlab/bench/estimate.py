"""What a sweep will cost, said before it is paid: its levels, requests and tokens, and,
once one request has been timed, about how long the whole sweep takes.

The estimate is a lower bound on purpose: a closed-loop level of c streams sends its
requests in ceil(n / c) waves, each at least as long as the request timed (a batching
server slows each request as c grows); an open-loop level lasts its schedule plus one
request. It says so in the line it prints.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from inferlab.bench.canary import CANARY_TOKENS, REST_READINGS
from inferlab.load.spec import Level
from inferlab.load.workload import Workload


@dataclass(frozen=True, slots=True)
class LevelCost:
    """One level's size: requests measured and warm-up, tokens asked, schedule length."""

    label: str
    streams: int | None  # closed loop: concurrent streams; None: open loop
    measured: int
    warmup: int
    prompt_tokens: int  # measured requests, all together
    output_tokens: int
    schedule_s: float  # open loop: the last arrival; 0 for a closed loop
    canaries: int = 0  # drift-canary requests sent around this level (bench/canary.py)

    def lower_bound_s(self, request_s: float) -> float:
        """At least this long when one request takes `request_s` (a canary: its share of
        one, CANARY_TOKENS of the level's mean output tokens, at most all of it)."""
        mean_out = self.output_tokens / self.measured if self.measured else 0.0
        canary_s = self.canaries * request_s * min(1.0, CANARY_TOKENS / max(mean_out, 1.0))
        if self.streams is None:
            return self.schedule_s + request_s + canary_s
        waves = math.ceil((self.measured + self.warmup) / max(1, self.streams))
        return waves * request_s + canary_s


def level_costs(workload: Workload, levels: tuple[Level, ...] | list[Level]) -> list[LevelCost]:
    costs = []
    for level in levels:
        reqs, warm = workload.requests(level), workload.warmup_requests(level)
        arrivals = reqs.arrival_s[~np.isnan(reqs.arrival_s)]
        costs.append(
            LevelCost(
                level.label,
                None if level.open_loop else int(level.value),
                len(reqs),
                len(warm),
                int(reqs.prompt_tokens.sum()),
                int(reqs.output_tokens.sum()),
                float(arrivals.max()) if len(arrivals) else 0.0,
            )
        )
    return costs


def with_canary(plan: list[LevelCost], canary: bool) -> list[LevelCost]:
    """The levels in the order they run, each with the drift canaries sent around it (the
    first: those at rest and its own; every other: one after it), when there is a canary."""
    if not canary:
        return plan
    return [
        dataclasses.replace(c, canaries=1 + (REST_READINGS if i == 0 else 0))
        for i, c in enumerate(plan)
    ]


def canary_note(levels_run: int) -> str:
    """What the drift canary adds to a sweep of `levels_run` level runs, for the plan."""
    n = REST_READINGS + levels_run
    return (
        f"; +{n} drift-canary requests of {CANARY_TOKENS} tokens, one at a time ("
        f"{REST_READINGS} at rest, then one after each level; --no-canary: none)"
    )


def plan_line(costs: list[LevelCost], repeats: int = 1, canary: bool = False) -> str:
    """'plan: 3 levels (c=1, c=4, c=16): 48 measured requests (+21 warm-up), ...'; with
    --repeat N, the levels N times over and the totals for all of them; with the drift
    canary, its requests too."""
    n = max(1, repeats)
    measured = n * sum(c.measured for c in costs)
    warm = n * sum(c.warmup for c in costs)
    labels = ", ".join(c.label for c in costs)
    prompt = n * sum(c.prompt_tokens for c in costs)
    output = n * sum(c.output_tokens for c in costs)
    line = (
        f"plan: {len(costs)} level(s) ({labels}): {measured:,} measured requests "
        f"(+{warm:,} warm-up), {prompt:,} prompt and {output:,} output tokens measured"
    )
    if n > 1:
        line += (
            f"; --repeat {n}: each level {n} times, interleaved, each time with fresh prompts "
            f"(about {n} times as long as one sweep)"
        )
    return line + (canary_note(n * len(costs)) if canary else "")


def estimate_line(costs: list[LevelCost], request_s: float, done_s: float = 0.0) -> str:
    """The whole sweep's lower bound once one request took `request_s`."""
    total = sum(c.lower_bound_s(request_s) for c in costs)
    return (
        f"estimate: at least {fmt_duration(max(total, done_s))} for the sweep (one request "
        f"took {request_s:.2f} s; requests slow down as concurrency grows)"
    )


def remaining_line(rest: list[LevelCost], request_s: float, after: str) -> str:
    """After a level: the levels left, at least as long as a request took at that level."""
    total = sum(c.lower_bound_s(request_s) for c in rest)
    labels = ", ".join(c.label for c in rest)
    return (
        f"estimate: at least {fmt_duration(total)} more for {labels} (a request took "
        f"{request_s:.2f} s at {after}, the median)"
    )


def fmt_duration(seconds: float) -> str:
    """'4.2 s', '45 s', '3 min 5 s', '1 h 2 min'."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def search_plan_line(kind: str, start: float, upper: float, max_levels: int, n: int) -> str:
    """--find-max-load: the levels are the search's to pick, so the plan states its bounds."""
    top = f"{upper:g}" if upper < 1e6 else "no set top"
    return (
        f"plan: --find-max-load {kind} from {start:g} ({top}): at most {max_levels} levels of "
        f"{n:,} measured requests each, chosen as it goes"
    )
