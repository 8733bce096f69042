"""The event loop: arrivals and iteration ends on a (time, sequence) heap.

An iteration ("step") runs the batch the policy picked; its duration comes
from the injected step-time model. Decoding sequences get one token per step
they join, so a sequence's token times are a contiguous slice of the global
list of decode-step end times (cheap for hour-long runs: per step the work is
proportional to what changes, not to the batch). KV capacity is counted in
blocks; when a step cannot grow every sequence, the latest-admitted one is
preempted (its KV dropped, to be recomputed) and counted.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from dataclasses import dataclass, field

from inferlab.errors import InferlabError
from inferlab.sim.steptime import StepTimeModel
from inferlab.sim.workload import Arrival


@dataclass(frozen=True, slots=True)
class Policy:
    name: str  # "sequential", "static" or "continuous"
    max_batch: int = 256
    chunk_tokens: int | None = None  # chunked prefill: prompt tokens per step
    kv_capacity_tokens: int | None = None  # None: unlimited
    block_tokens: int = 16


@dataclass(slots=True)
class SimRequest:
    id: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    injected: bool = False
    user: int | None = None  # closed-loop user who sent it
    prefill_target: int = 0  # tokens to (re)compute before decoding
    prefilled: int = 0
    generated: int = 0  # tokens emitted so far (survives preemption: the user saw them)
    segments: list[tuple[int, int]] = field(default_factory=list)  # (first step idx, count)
    extra_times: list[float] = field(default_factory=list)  # tokens emitted by prefill steps
    decode_from: int = -1  # decode-step index of this segment's start; -1 while prefilling
    finish_s: float | None = None
    preemptions: int = 0
    admit_order: int = 0

    def blocks(self, block: int) -> int:
        return math.ceil((self.prefilled + self.generated) / block) if self.prefilled else 0


@dataclass(slots=True)
class SimResult:
    requests: list[SimRequest]
    decode_step_end_s: list[float]
    preemptions: int
    steps: int
    timeline: list[tuple[float, int, int, int]]  # (t, batch, kv blocks used, queue length)
    sim_time_s: float

    def token_times(self, r: SimRequest) -> list[float]:
        times = list(r.extra_times)
        for start, count in r.segments:
            times.extend(self.decode_step_end_s[start : start + count])
        times.sort()
        return times


ARRIVE, STEP_END = 0, 1


def simulate(
    arrivals: list[Arrival],
    model: StepTimeModel,
    policy: Policy,
    users: int = 0,
    user_requests: int = 0,
    user_output: int = 0,
    user_prompt: int = 0,
    max_time_s: float = float("inf"),
    user_stagger_s: float = 0.0,
) -> SimResult:
    """Run arrivals (and `users` closed-loop users, each sending `user_requests`) to completion.

    Closed-loop users start together unless `user_stagger_s` spreads their first
    requests evenly over that window (a real closed loop drifts out of step, so its
    prefills land among other users' decodes).
    """
    seq = itertools.count()
    heap: list[tuple[float, int, int, SimRequest | None]] = []
    ids = itertools.count()
    for a in arrivals:
        r = SimRequest(next(ids), a.arrival_s, a.prompt_tokens, a.output_tokens, a.injected)
        heapq.heappush(heap, (a.arrival_s, next(seq), ARRIVE, r))
    sent = dict.fromkeys(range(users), 0)
    for u in range(users):
        t0 = user_stagger_s * u / users if users else 0.0
        r = SimRequest(next(ids), t0, user_prompt, user_output, user=u)
        sent[u] = 1
        heapq.heappush(heap, (t0, next(seq), ARRIVE, r))
    cap_blocks = (
        policy.kv_capacity_tokens // policy.block_tokens
        if policy.kv_capacity_tokens is not None
        else None
    )
    waiting: deque[SimRequest] = deque()
    running: list[SimRequest] = []
    done: list[SimRequest] = []
    decode_end: list[float] = []
    timeline: list[tuple[float, int, int, int]] = []
    busy = False
    preemptions = steps = 0
    admit_counter = itertools.count()
    plan: tuple[list[tuple[SimRequest, int]], list[SimRequest]] = ([], [])
    now = 0.0

    def used_blocks() -> int:
        return sum(r.blocks(policy.block_tokens) for r in running)

    def admit() -> None:
        limit = 1 if policy.name == "sequential" else policy.max_batch
        if policy.name == "static" and running:
            return  # a static batch runs to its longest member before anyone joins
        while waiting and len(running) < limit:
            r = waiting[0]
            need = math.ceil((r.prompt_tokens + r.generated + 1) / policy.block_tokens)
            if cap_blocks is not None:
                if need > cap_blocks:
                    raise InferlabError(
                        f"the KV cache ({cap_blocks * policy.block_tokens} tokens) cannot hold "
                        f"even one request of {r.prompt_tokens + r.output_tokens} tokens"
                    )
                if used_blocks() + need > cap_blocks:
                    return
            waiting.popleft()
            r.prefill_target = r.prompt_tokens + r.generated
            r.prefilled = 0
            r.admit_order = next(admit_counter)
            running.append(r)

    def preempt_for_growth(decoders: list[SimRequest]) -> list[SimRequest]:
        nonlocal preemptions
        if cap_blocks is None:
            return decoders
        while True:
            grow = sum(
                1 for r in decoders if (r.prefilled + r.generated) % policy.block_tokens == 0
            )
            if used_blocks() + grow <= cap_blocks or len(running) <= 1:
                return decoders
            victim = max(running, key=lambda r: r.admit_order)
            running.remove(victim)
            _close_segment(victim, len(decode_end))
            victim.prefilled = 0
            victim.preemptions += 1
            preemptions += 1
            waiting.appendleft(victim)
            decoders = [r for r in decoders if r is not victim]

    def start_step(t: float) -> None:
        nonlocal busy, plan, steps
        admit()
        if not running:
            return
        prefilling = [r for r in running if r.prefilled < r.prefill_target]
        decoders = [r for r in running if r.prefilled >= r.prefill_target]
        chunks: list[tuple[SimRequest, int]] = []
        if policy.chunk_tokens:
            budget = policy.chunk_tokens
            for r in prefilling:
                if budget <= 0:
                    break
                n = min(budget, r.prefill_target - r.prefilled)
                chunks.append((r, n))
                budget -= n
        elif prefilling:
            chunks = [(r, r.prefill_target - r.prefilled) for r in prefilling]
            decoders = []  # an unchunked prefill runs alone: every stream waits for it
        decoders = preempt_for_growth(decoders)
        ctxs = [r.prefilled + r.generated for r in decoders]
        dt = model.step_time_s([(n, r.prefilled) for r, n in chunks], ctxs)
        plan = (chunks, decoders)
        busy = True
        steps += 1
        timeline.append((t, len(decoders) + len(chunks), used_blocks(), len(waiting)))
        heapq.heappush(heap, (t + dt, next(seq), STEP_END, None))

    def finish_step(t: float) -> None:
        nonlocal busy
        chunks, decoders = plan
        if decoders:
            idx = len(decode_end)
            decode_end.append(t)
            for r in decoders:
                if r.decode_from < 0:
                    r.decode_from = idx
                r.generated += 1
        for r, n in chunks:
            r.prefilled += n
            if r.prefilled >= r.prefill_target:
                r.generated += 1  # the prefill pass yields the next token
                r.extra_times.append(t)
        for r in [r for r in running if r.generated >= r.output_tokens]:
            _close_segment(r, len(decode_end))
            r.finish_s = t
            running.remove(r)
            done.append(r)
            if r.user is not None and sent[r.user] < user_requests:
                sent[r.user] += 1
                nxt = SimRequest(next(ids), t, user_prompt, user_output, user=r.user)
                heapq.heappush(heap, (t, next(seq), ARRIVE, nxt))
        busy = False

    while heap:
        now, _, kind, req = heapq.heappop(heap)
        if now > max_time_s:
            break
        if kind == ARRIVE:
            assert req is not None
            waiting.append(req)
        else:
            finish_step(now)
        if not busy:
            start_step(now)
    unfinished = list(running) + list(waiting)
    for r in running:
        _close_segment(r, len(decode_end))
    return SimResult(done + unfinished, decode_end, preemptions, steps, timeline, now)


def _close_segment(r: SimRequest, decode_steps: int) -> None:
    """Record the decode steps this request took part in since it started decoding."""
    if r.decode_from >= 0:
        r.segments.append((r.decode_from, decode_steps - r.decode_from))
        r.decode_from = -1
