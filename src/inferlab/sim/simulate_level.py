"""One simulated level: `simulate_level(cfg, level)`, the only place a level is simulated.

`SimConfig` is everything a simulation needs, typed and built once at the edge: the step
time and its description, the scheduler, the limits, the `Workload` (load/: the same
request specs bench sends for the same flags), the levels, the SLO and one-off injected
prompts. A level's specs become simulated arrivals (open loop and trace), closed-loop
users (`value` users sharing one queue) or conversations; the result is summarised as
bench summarises a measured level, and judged against the SLO (sim/slo_level.py).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from inferlab.errors import ConfigError, InferlabError, literal
from inferlab.load.conversations import with_template
from inferlab.load.spec import Level, Requests
from inferlab.load.workload import Workload
from inferlab.sim.engine import SimResult, simulate
from inferlab.sim.limits import Limits, at_least
from inferlab.sim.output import TokenTimes, summarize_result, to_records
from inferlab.sim.prefix_cache import prompt_runs
from inferlab.sim.request import NO_COSTS, RequestCosts, RequestModel
from inferlab.sim.scheduler import Policy
from inferlab.sim.slo_level import judge_simulated
from inferlab.sim.steptime.base import StepTimeModel
from inferlab.sim.users import Chats, ClosedLoop
from inferlab.sim.workload import Arrival, arrivals_of, closed_loop_of, parse_inject
from inferlab.slo.grammar import Slo
from inferlab.slo.search import SearchSpec
from inferlab.summary import LevelSummary


@dataclass(frozen=True, slots=True)
class SimConfig:
    """A simulation, as one value: what `simulate_level`, `run` and `search` take."""

    model: StepTimeModel
    policy: Policy
    # The one load description (load/): levels, lengths, arrivals, seed, requests per level.
    workload: Workload | None = None
    slo: Slo | None = None
    limits: Limits = Limits()
    injected: tuple[str, ...] = ()  # one-off prompts, TOKENS@TIME (e.g. 8000@2s)
    requests_per_user: int = 1  # a closed loop without a requests-per-level count
    min_requests: int = 0  # a closed-loop level's requests at least (the search's probes)
    stagger_s: float = 0.0  # closed loop: the users' first requests spread over this
    max_time_s: float = math.inf  # the simulation stops here
    description: dict[str, Any] = dataclasses.field(default_factory=dict)  # the step time's
    command: tuple[str, ...] = ()  # as summary.json states it
    search: SearchSpec | None = None  # --find-max-load: the search picks the levels
    costs: RequestCosts = NO_COSTS  # per-request serving costs beside the steps (a profile's)

    @property
    def levels(self) -> tuple[Level, ...]:
        """The load's levels (none for a search: it picks its own)."""
        return self.workload.levels if self.workload is not None else ()


@dataclass(frozen=True, slots=True)
class SimLevel:
    """A simulated level: the engine's result, its token times, its judged summary, and the
    request specs and users it ran."""

    result: SimResult
    times: TokenTimes
    summary: LevelSummary
    requests: Requests
    users: ClosedLoop | Chats | None
    arrivals: int  # open-loop and injected requests
    workload: Workload | None  # the workload drawn from, with the level's request count


def sized(cfg: SimConfig, level: Level) -> Workload:
    """The workload with the level's request count, checked against the limits before drawing
    (closed loop without a count: users x requests per user, at least `min_requests`)."""
    w, limits = cfg.workload, cfg.limits
    if w is None:
        raise InferlabError(f"level {level.label}: no workload to draw its requests from")
    if level.kind == "concurrency" and w.requests_per_level is None:
        users = int(level.value)
        per_user = at_least(cfg.requests_per_user, 1, "requests_per_user")
        per_user = max(per_user, math.ceil(cfg.min_requests / users))
        what = f"{{users}} {users} x {{requests_per_user}} {per_user}"
        limits.check_requests(users * per_user, what)
        return dataclasses.replace(w, requests_per_level=users * per_user)
    if level.kind == "rate" and w.requests_per_level is None and w.duration_s is not None:
        what = f"{{rate}} {level.value:g}/s x {{duration_s}} {w.duration_s:g}s"
        limits.check_requests(level.value * w.duration_s, what)
    elif w.requests_per_level is not None and level.kind != "trace":
        limits.check_requests(w.requests_per_level, "{requests_per_level}")
    return w


def load_label(level: Level, reqs: Requests) -> Level:
    """The level as summary.json states it: a trace's value is its offered rate."""
    if level.kind == "trace" and not level.value and len(reqs) > 1:
        span = float(reqs.arrival_s[-1] - reqs.arrival_s[0])
        offered = (len(reqs) - 1) / span if span > 0 else 0.0
        return dataclasses.replace(level, value=offered, name=level.label)
    return level


def _users(cfg: SimConfig, level: Level, reqs: Requests) -> ClosedLoop | Chats | None:
    if reqs.message_tokens is not None:
        first = reqs.turn == 0
        return Chats(
            reqs.prompt_tokens.tolist(),
            reqs.output_tokens.tolist(),
            reqs.conversation_id.tolist(),
            reqs.think_time_s,
            users=int(level.value) if level.kind == "concurrency" else None,
            starts=reqs.arrival_s[first].tolist() if level.open_loop else [],
            stagger_s=cfg.stagger_s,
        )
    if level.kind == "concurrency":
        return closed_loop_of(reqs, int(level.value), cfg.stagger_s)
    return None


def _arrivals(cfg: SimConfig, level: Level, reqs: Requests) -> list[Arrival]:
    out = []
    if cfg.injected:
        mean = cfg.workload.output.mean_tokens if cfg.workload else 1
        out = [parse_inject(x, max(1, round(mean))) for x in cfg.injected]
    if reqs.message_tokens is None and level.kind != "concurrency":
        out += arrivals_of(reqs)
    return out


def check_lengths(arrivals: list[Arrival], r: Requests, cfg: SimConfig) -> None:
    """Refuse a request no simulation within the step limit can finish."""
    pairs = [(a.prompt_tokens, a.output_tokens) for a in arrivals]
    if len(r):
        i, j = int(r.output_tokens.argmax()), int(r.prompt_tokens.argmax())
        pairs += [(int(r.prompt_tokens[k]), int(r.output_tokens[k])) for k in (i, j)]
    if not pairs:
        return
    for p, o in (max(pairs, key=lambda x: x[1]), max(pairs, key=lambda x: x[0])):
        cfg.limits.check_request_steps(p, o, cfg.policy.chunk_tokens)


def request_model(cfg: SimConfig, w: Workload | None, reqs: Requests) -> RequestModel:
    """The serving costs, and the prompts' identities where they share a prefix (as bench
    asks the server to cache prompts only then): the policy reuses what is cached."""
    shares = w is not None and w.shares_prefix
    return RequestModel(cfg.costs, prompt_runs(reqs) if shares else None)


def simulate_level(cfg: SimConfig, level: Level, specs: Requests | None = None) -> SimLevel:
    """Simulate `level` (its specs drawn from the workload, unless given), summarise it as
    bench does and judge it against the SLO."""
    w = cfg.workload
    if specs is None:
        w = sized(cfg, level)
        specs = w.requests(level)
    c = cfg.costs
    reqs = with_template(
        specs, c.chat_first_tokens, c.chat_per_message_tokens, c.chat_shared_tokens
    )
    if level.kind == "trace":
        cfg.limits.check_requests(len(reqs), "the trace")
    users, arrivals = _users(cfg, level, reqs), _arrivals(cfg, level, reqs)
    check_lengths(arrivals, reqs, cfg)
    res = simulate(
        arrivals,
        cfg.model,
        cfg.policy,
        users,
        cfg.max_time_s,
        cfg.limits.max_steps,
        request_model(cfg, w, reqs),
    )
    times = TokenTimes.of(res)
    label = load_label(level, reqs)
    lv = summarize_result(res, label, times)
    if reqs.message_tokens is not None:  # a conversation level: TTFT and TPOT per turn
        from inferlab.metrics.turns import per_turn

        lv = dataclasses.replace(lv, per_turn=per_turn(to_records(res, lv.label, times, reqs)))
    lv = judge_simulated(lv, res, label, cfg.slo, times)
    return SimLevel(res, times, lv, reqs, users, len(arrivals), w)


def simulate_probe(cfg: SimConfig, level: Level, what: str) -> SimLevel:
    """`simulate_level` for one probe of a search (`what`: its load, as the user reads it): a
    refusal while it runs (a batch past the step time's limit) names the probe, since the
    search says each probe only once it is done."""
    try:
        return simulate_level(cfg, level)
    except ConfigError as e:
        raise type(e)(f"probing {literal(what)}: {e.template}") from e
