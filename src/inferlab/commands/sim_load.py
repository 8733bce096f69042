"""simulate's load: the shared load flags (load/flags.py) as one simulated level.

The request specs are drawn by load/, exactly as bench draws them for the same flags;
this module only picks the one level simulate runs, maps simulate's own flags onto it
(`--users N` is `--concurrency N`, `--requests-per-user R` gives N x R requests) and
turns the specs into simulated arrivals or closed-loop users.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from inferlab.errors import InferlabError
from inferlab.load.flags import LoadDefaults, load_from_args
from inferlab.load.spec import Level, Requests
from inferlab.load.workload import Workload

if TYPE_CHECKING:
    from inferlab.sim.engine import SimResult
    from inferlab.sim.limits import Limits
    from inferlab.sim.output import LoadLabel, TokenTimes
    from inferlab.sim.scheduler import Policy
    from inferlab.sim.users import Chats, ClosedLoop
    from inferlab.sim.workload import Arrival
    from inferlab.summary import LevelSummary


@dataclass(frozen=True, slots=True)
class Load:
    arrivals: list[Arrival]
    users: ClosedLoop | Chats | None
    label: LoadLabel
    workload: Workload
    requests: Requests


def _level(args: argparse.Namespace, workload: Workload) -> Level:
    """The one level simulate runs (--users N is --concurrency N)."""
    from inferlab.sim.limits import at_least

    if args.users is not None:
        if args.concurrency or args.rate or args.trace:
            raise InferlabError("--users is --concurrency: give one of --users, --rate, --trace")
        return Level("concurrency", at_least(args.users, 1, "--users"))
    if not (args.concurrency or args.rate or args.trace):
        raise InferlabError("give a load: --concurrency N (--users N), --rate R/s or --trace FILE")
    if len(workload.levels) != 1:
        raise InferlabError("simulate runs one level: give one --concurrency or --rate value")
    return workload.levels[0]


def _count(args: argparse.Namespace, w: Workload, level: Level, limits: Limits) -> Workload:
    """Check the size before drawing; closed loop without a count: users x requests-per-user."""
    from inferlab.sim.limits import at_least

    if level.kind == "concurrency" and args.requests_per_level is None:
        per_user = at_least(args.requests_per_user, 1, "--requests-per-user")
        users = int(level.value)
        limits.check_requests(users * per_user, f"--users {users} x --requests-per-user {per_user}")
        return dataclasses.replace(w, requests_per_level=users * per_user)
    if level.kind == "rate" and w.requests_per_level is None and w.duration_s is not None:
        what = f"--rate {level.value:g}/s x --duration {w.duration_s:g}s"
        limits.check_requests(level.value * w.duration_s, what)
    elif w.requests_per_level is not None and level.kind != "trace":
        limits.check_requests(w.requests_per_level, "--requests-per-level")
    return w


def build_load(args: argparse.Namespace, defaults: LoadDefaults, limits: Limits) -> Load:
    from inferlab.sim.output import LoadLabel
    from inferlab.sim.workload import arrivals_of, closed_loop_of, parse_inject

    if not 0 <= args.stagger < math.inf:
        raise InferlabError("--stagger must be a finite time >= 0, e.g. 2s")
    workload = load_from_args(args, defaults)
    level = _level(args, workload)
    workload = _count(args, workload, level, limits)
    reqs = workload.requests(level)
    if level.kind == "trace":
        limits.check_requests(len(reqs), f"the trace {args.trace}")
    injected_output = max(1, round(workload.output.mean_tokens))
    arrivals = [parse_inject(x, injected_output) for x in args.inject_prompt]
    label = LoadLabel(level.label, level.summary_kind, level.value or _offered(reqs))
    if reqs.message_tokens is not None:
        return Load(arrivals, _chats(reqs, level, args.stagger), label, workload, reqs)
    if level.kind == "concurrency":
        users = closed_loop_of(reqs, int(level.value), args.stagger)
        return Load(arrivals, users, label, workload, reqs)
    return Load(arrivals + arrivals_of(reqs), None, label, workload, reqs)


def _chats(reqs: Requests, level: Level, stagger_s: float) -> Chats:
    from inferlab.sim.users import Chats

    first = reqs.turn == 0
    return Chats(
        reqs.prompt_tokens.tolist(),
        reqs.output_tokens.tolist(),
        reqs.conversation_id.tolist(),
        reqs.think_time_s,
        users=int(level.value) if level.kind == "concurrency" else None,
        starts=reqs.arrival_s[first].tolist() if level.open_loop else [],
        stagger_s=stagger_s,
    )


def _offered(reqs: Requests) -> float:
    """A trace level's offered rate: its requests over its span."""
    if len(reqs) < 2:
        return 0.0
    span = float(reqs.arrival_s[-1] - reqs.arrival_s[0])
    return (len(reqs) - 1) / span if span > 0 else 0.0


def check_lengths(load: Load, policy: Policy, limits: Limits) -> None:
    """Refuse a request no simulation within --max-steps can finish."""
    pairs = [(a.prompt_tokens, a.output_tokens) for a in load.arrivals]
    r = load.requests
    if len(r):
        i, j = int(r.output_tokens.argmax()), int(r.prompt_tokens.argmax())
        pairs += [(int(r.prompt_tokens[k]), int(r.output_tokens[k])) for k in (i, j)]
    if not pairs:
        return
    for p, o in (max(pairs, key=lambda x: x[1]), max(pairs, key=lambda x: x[0])):
        limits.check_request_steps(p, o, policy.chunk_tokens)


def workload_json(load: Load, inject: list[str]) -> dict[str, Any]:
    """summary.json's workload block for a simulated level."""
    w, r = load.workload, load.requests
    n = len(r)
    return {
        "prompt_tokens": round(float(r.prompt_tokens.mean())) if n else 0,
        "output_tokens": round(float(r.output_tokens.mean())) if n else 0,
        "prompt_tokens_range": [int(r.prompt_tokens.min()), int(r.prompt_tokens.max())]
        if n
        else [0, 0],
        "output_tokens_range": [int(r.output_tokens.min()), int(r.output_tokens.max())]
        if n
        else [0, 0],
        "prompt_tokens_dist": w.prompt.describe(),
        "output_tokens_dist": w.output.describe(),
        "requests_per_level": len(load.arrivals) + (load.users.total_requests if load.users else 0),
        "users": (load.users.users or 0) if load.users else 0,
        "injected": inject,
        "load": w.to_json(),
    }


def with_turns(level: LevelSummary, res: SimResult, times: TokenTimes, load: Load) -> LevelSummary:
    """A conversation level's TTFT and TPOT per turn, as bench states them."""
    if load.requests.message_tokens is None:
        return level
    from inferlab.metrics.turns import per_turn
    from inferlab.sim.output import to_records

    records = to_records(res, level.label, times, load.requests)
    return dataclasses.replace(level, per_turn=per_turn(records))
