"""What a sweep will cost, said before it is paid: its levels, requests and tokens, and,
once one request has been timed, about how long the whole sweep takes.

The estimate is a lower bound on purpose: a closed-loop level of c streams sends its
requests in ceil(n / c) waves, each at least as long as the request timed (a batching
server slows each request as c grows); an open-loop level lasts its schedule plus one
request. It says so in the line it prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

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

    def lower_bound_s(self, request_s: float) -> float:
        """At least this long when one request takes `request_s`."""
        if self.streams is None:
            return self.schedule_s + request_s
        waves = math.ceil((self.measured + self.warmup) / max(1, self.streams))
        return waves * request_s


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


def plan_line(costs: list[LevelCost], repeats: int = 1) -> str:
    """'plan: 3 levels (c=1, c=4, c=16): 48 measured requests (+21 warm-up), ...'; with
    --repeat N, the levels N times over and the totals for all of them."""
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
    return line


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
