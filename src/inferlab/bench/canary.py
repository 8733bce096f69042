"""The drift canary: one fixed short request, sent while the server is otherwise idle, whose
TPOT over the run is the machine's speed.

The same request every time: the same prompt (no workload prompt shares its first word, so
llama-server never picks a slot for it by prompt similarity), the same forced length
(CANARY_TOKENS, ignore_eos), and on llama-server the same slot (`id_slot` CANARY_SLOT, on
/completions without the prompt cache, the user's --extra-body left out, as
bench/settle.py's requests). REST_READINGS are sent one after another before the first
level, to measure the canary's own noise at rest (their spread); then one after every
level and repeat, before the next one (and before --settle-slots settles the slots, so the
next level still starts from an idle server's order). Each is cut after CANARY_TIMEOUT_S
at most, as every request is bounded.

A level whose canary moved beyond its noise is warned `machine_drift` (the rule is
metrics/checks.py's `canary_moved`); summary.json keeps every reading (`canary`).
A server that fails every reading at rest gets no more of them, and the run says why.

Just before each request, the machine canary (bench/machine_canary.py: a fixed matmul and
memory read on the server's cores) takes its reading, kept beside the request's
(`canary.machine`); a machine_drift warning then says which moved, the machine or the
server (metrics/machine_verdict.py's rule).
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import aiohttp

from inferlab.bench.client import Endpoint, stream_request
from inferlab.bench.machine_canary import WORKLOAD, MachineProbe, machine_probe, take_machine
from inferlab.metrics.checks import (
    CanaryAround,
    canary_moved,
    drift_threshold,
    machine_drift,
    warning,
)
from inferlab.metrics.covariate import MIN_PAIRS, cuped
from inferlab.metrics.machine_verdict import verdict_of, verdict_words, which_slowed
from inferlab.metrics.requests import latency
from inferlab.metrics.speed_shift import spread_of
from inferlab.records import RequestRecord
from inferlab.summary import Canary, CanaryReading, MachineCanary, MachineReading, RunWarning

if TYPE_CHECKING:
    from inferlab.bench.runner import LevelRun

CANARY_PROMPT = "Canary reading: the same short request, sent again and again."
CANARY_TOKENS = 16  # 15 gaps: its TPOT is a mean over 15 steps of one sequence
CANARY_SLOT = 0  # llama-server: the slot --settle-slots releases last, so its order holds
REST_READINGS = 3  # at the start, one after another: the canary's own noise
CANARY_TIMEOUT_S = 30.0  # 16 tokens take ~1 s on a CPU; a canary that never ends ends here


def canary_endpoint(endpoint: Endpoint) -> Endpoint:
    """The run's endpoint as the canary sends it: forced length, cut after
    CANARY_TIMEOUT_S, and on llama-server pinned to CANARY_SLOT on /completions without
    the prompt cache (its extra body is the slot alone)."""
    ep = endpoint
    if endpoint.server_kind == "llamacpp":
        ep = dataclasses.replace(
            endpoint.pinned_to(CANARY_SLOT), api="completions", cache_prompt=False
        )
    timeout_s = min(endpoint.request_timeout_s, CANARY_TIMEOUT_S)
    return dataclasses.replace(ep, force_length=True, request_timeout_s=timeout_s)


@dataclass(frozen=True, slots=True)
class Taken:
    """One canary as sent: when (s after the run's origin), its TPOT (None: failed), and
    the level run it followed (its index in the run; -1: at rest, before the first)."""

    at_s: float
    tpot_ms: float | None
    after_run: int
    error: str | None = None
    machine: MachineReading | None = None  # the machine canary's, taken just before


@dataclass(slots=True)
class CanaryLog:
    """A run's canaries so far; `on` is False once every reading at rest failed."""

    endpoint: Endpoint
    taken: list[Taken] = field(default_factory=list)
    on: bool = True
    machine: MachineProbe | None = None  # None: no machine canary beside the requests

    def rest_ms(self) -> list[float]:
        return [t.tpot_ms for t in self.taken if t.after_run < 0 and t.tpot_ms is not None]

    def rest_median_ms(self) -> float | None:
        rest = self.rest_ms()
        return statistics.median(rest) if rest else None

    def rest_spread(self) -> float | None:
        """(max - min) / median of the readings at rest; None with fewer than two."""
        return spread_of(self.rest_ms())

    def around(self, run_index: int) -> CanaryAround:
        """The readings just before and just after one level run, and the rest's median."""
        before = [t for t in self.taken if t.after_run == run_index - 1 and t.tpot_ms]
        after = [t for t in self.taken if t.after_run == run_index and t.tpot_ms]
        return CanaryAround(
            before[-1].tpot_ms if before else None,
            after[0].tpot_ms if after else None,
            self.rest_median_ms(),
        )


async def take(log: CanaryLog, session: aiohttp.ClientSession, t0_ns: int, after_run: int) -> None:
    """Send one canary and note its TPOT (a failure noted with its error, never raised);
    the machine canary's reading first, while the server is idle."""
    probe = log.machine
    machine = None if probe is None else await asyncio.to_thread(take_machine, probe)
    rec = RequestRecord(-1, "canary", "warmup", 0, CANARY_TOKENS)
    await stream_request(session, log.endpoint, rec, CANARY_PROMPT, t0_ns)
    lat = latency(rec)
    tpot_s = lat.tpot_s if lat is not None else None
    error = None
    if tpot_s is None:
        error = rec.error or f"{rec.n_out} token(s) streamed: no TPOT"
    tpot_ms = None if tpot_s is None else tpot_s * 1e3
    log.taken.append(Taken(rec.send_ns * 1e-9, tpot_ms, after_run, error, machine))


async def start_canary(
    session: aiohttp.ClientSession, endpoint: Endpoint, t0_ns: int
) -> tuple[CanaryLog, RunWarning | None]:
    """REST_READINGS canaries one after another, each with the machine canary's reading;
    a warning (and no more canaries) when every one of them failed."""
    probe = await asyncio.to_thread(machine_probe, endpoint.base_url)
    log = CanaryLog(canary_endpoint(endpoint), machine=probe)
    for _ in range(REST_READINGS):
        await take(log, session, t0_ns, -1)
    if log.rest_ms():
        return log, None
    log.on = False
    why = log.taken[0].error if log.taken else "none sent"
    msg = f"the drift canary failed at rest ({why}): the run has no canary"
    return log, warning("canary_failed", "run", "info", msg)


async def after_level(
    log: CanaryLog | None, session: aiohttp.ClientSession, t0_ns: int, run_index: int
) -> None:
    """The canary after level run `run_index` (nothing without a canary)."""
    if log is not None and log.on:
        await take(log, session, t0_ns, run_index)


def canary_block(log: CanaryLog, runs: list[LevelRun]) -> Canary:
    """The run's canary for summary.json: every reading, the rest's median and spread,
    and the threshold of the drift rule."""
    return block_of(log, [(r.level.label, r.repeat) for r in runs])


def block_of(log: CanaryLog, steps: Sequence[tuple[str, int | None]]) -> Canary:
    """A canary record whose readings name the step each preceded: `steps` are what the
    run measured in order, (a label, its repeat), and a reading's `after_run` indexes
    them (bench's level runs; the profile's probe groups)."""
    spread = log.rest_spread()
    pinned = log.endpoint.server_kind == "llamacpp"
    block = machine_block(log) if log.machine is not None else None
    canary = Canary(
        prompt=CANARY_PROMPT,
        output_tokens=CANARY_TOKENS,
        slot=CANARY_SLOT if pinned else None,
        rest_tpot_ms=log.rest_median_ms(),
        rest_spread=spread,
        drift_threshold=drift_threshold(spread),
        readings=tuple(_reading(t, steps) for t in log.taken),
        machine=block,
    )
    if block is None:
        return canary
    # the verdict read from the record as written, as a report reads two runs' records
    block = dataclasses.replace(block, verdict=verdict_of(canary))
    return dataclasses.replace(canary, machine=block)


def _ms(taken: Sequence[Taken]) -> tuple[list[float], list[float]]:
    """The server canary's TPOTs and the machine canary's matmul_ms + read_ms of readings."""
    server = [t.tpot_ms for t in taken if t.tpot_ms is not None]
    machine = [t.machine.machine_ms for t in taken if t.machine is not None]
    return server, machine


def machine_block(log: CanaryLog) -> MachineCanary:
    """summary.json `canary.machine` but its verdict: every machine reading, in the
    requests' order, and how much of the server canary's variance it explains."""
    rest_m = _ms([t for t in log.taken if t.after_run < 0])[1]
    both = [t for t in log.taken if t.tpot_ms is not None and t.machine is not None]
    server, machine = _ms(both)
    fit = cuped(server, machine) if len(both) >= MIN_PAIRS else None
    return MachineCanary(
        workload=WORKLOAD,
        readings=tuple(t.machine for t in log.taken),
        rest_machine_ms=statistics.median(rest_m) if rest_m else None,
        rest_spread=spread_of(rest_m),
        verdict=None,
        server_variance_explained=None if fit is None else fit.reduction,
    )


def _reading(t: Taken, steps: Sequence[tuple[str, int | None]]) -> CanaryReading:
    nxt = steps[t.after_run + 1] if t.after_run + 1 < len(steps) else None
    return CanaryReading(
        at_s=t.at_s,
        tpot_ms=t.tpot_ms,
        at_rest=t.after_run < 0,
        before=nxt[0] if nxt is not None else None,
        repeat=nxt[1] if nxt is not None else None,
        error=t.error,
    )


def drift_warning(
    log: CanaryLog | None, level_runs: list[LevelRun], runs: list[LevelRun]
) -> RunWarning | None:
    """machine_drift for one level (its runs: one, or one per --repeat) when the canary
    moved beyond its noise around any of them; None without a canary."""
    if log is None or not log.on or not level_runs:
        return None
    threshold = drift_threshold(log.rest_spread())
    moves = []
    for run in level_runs:
        index = next(j for j, r in enumerate(runs) if r is run)
        moved = canary_moved(log.around(index), threshold)
        if moved is not None and len(level_runs) > 1:
            moved = f"run {run.repeat + 1} of {len(level_runs)}: {moved}"
        if moved is not None:
            moves.append(moved)
    drift = machine_drift(level_runs[0].level.label, moves, threshold)
    if drift is None or (said := _which_moved(log, level_runs, runs)) is None:
        return drift
    return dataclasses.replace(drift, message=f"{drift.message}. Which moved: {said}")


def _which_moved(log: CanaryLog, level_runs: list[LevelRun], runs: list[LevelRun]) -> str | None:
    """The machine canary's word on a level: the readings just after its runs (else just
    before, where none came after) against those at rest (None without machine readings)."""
    after: list[Taken] = []
    before: list[Taken] = []
    for run in level_runs:
        index = next(j for j, r in enumerate(runs) if r is run)
        before += [t for t in log.taken if t.after_run == index - 1][-1:]
        after += [t for t in log.taken if t.after_run == index][:1]
    rest_s, rest_m = _ms([t for t in log.taken if t.after_run < 0])
    near = after if _ms(after)[1] else before
    near_s, near_m = _ms(near)
    verdict = which_slowed(rest_s, near_s, rest_m, near_m)
    if verdict is None:
        return None
    where = next((t.machine.cores_from for t in near if t.machine is not None), "")
    cores = f". The machine canary ran on {where}" if where else ""
    return f"{verdict_words(verdict)}{cores}"
