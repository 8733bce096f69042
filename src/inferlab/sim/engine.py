"""The event loop: arrivals on a (time, sequence) heap, beside the one step in flight.

An engine step runs the batch the scheduler picked (sim/policies/); its
duration comes from the injected step-time model (sim/steptime/base.py). Decoding
sequences get one token per step; the running set (sim/running.py) keeps that
progress lazily, so a step costs what changes in it, not the batch size. KV
capacity is counted in blocks (sim/kv.py); closed-loop users (sim/users.py)
send their next request when the previous one finishes.

Two things beside the steps, both off by default (sim/request.py's RequestModel): a
per-request serving cost (a request reaches the scheduler `request_overhead_s`, plus
`request_overhead_per_token_s` a prompt token, after it arrives; its client has the
reply `finish_overhead_s` after its last step), and prompt identities, with which the
policy reuses cached prefixes (sim/prefix_cache.py; llama.cpp its slots') and hears of
each step's prompt chunks and each finish; the result then predicts the prefix-cache
hit ratio.

A step time measured up to some batch (an engine baseline, a profile: steptime/base.py's
`BatchLimited`) answers for so many decoders: a step whose decoders pass that is refused,
naming the request that joined last and when, unless forced. So a load whose batch is not
known ahead (an open loop) is refused only by a batch it reaches.

At most one step runs at a time, so its end is kept beside the heap rather than
in it. Everything on the heap was pushed before the step began, so on a tie in
time the heap's event comes first: the step ends first only when strictly
earlier (the order a shared (time, sequence) heap would give).
"""

from __future__ import annotations

import heapq
import itertools
import math
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from inferlab.sim.kv import KVBlockManager
from inferlab.sim.limits import DEFAULT_MAX_STEPS, SimulationTooLarge
from inferlab.sim.pause_gc import gc_paused
from inferlab.sim.policies import make_scheduler
from inferlab.sim.policies.base import BatchScheduler
from inferlab.sim.request import DECODE, PLAIN, RequestModel, SimRequest
from inferlab.sim.running import Running
from inferlab.sim.scheduler import DECODE_ONLY, Batch, Policy, Scheduler
from inferlab.sim.steptime.base import BatchLimited, DecodeBatch, StepTimeModel
from inferlab.sim.users import Chats, ChatUsers, ClosedLoop, ClosedLoopUsers
from inferlab.sim.workload import Arrival

NO_DECODES = DecodeBatch(0, 0, list)
NO_PREFILL: tuple[tuple[int, int], ...] = ()  # the decode-only steps share it
NO_CAP = 1 << 62  # blocks: an unlimited cache, as a number the decode-only loop compares


@dataclass(slots=True)
class Timeline:
    """Per engine step: start time, batch size, KV blocks used, queue length; a column each
    (four appends a step: cheaper than a row's tuple, and no Python float kept per value)."""

    t_s: array[float]
    batches: array[float]
    kv_blocks_used: array[float]
    queue_lengths: array[float]

    COLUMNS = ("t_s", "batch", "kv_blocks_used", "queue_length")

    @classmethod
    def empty(cls) -> Timeline:
        return cls(array("d"), array("d"), array("d"), array("d"))

    def column(self, i: int) -> array[float]:
        return (self.t_s, self.batches, self.kv_blocks_used, self.queue_lengths)[i]

    @property
    def batch(self) -> list[int]:
        return [int(x) for x in self.batches]

    @property
    def kv_blocks(self) -> list[int]:
        return [int(x) for x in self.kv_blocks_used]

    @property
    def queue(self) -> list[int]:
        return [int(x) for x in self.queue_lengths]


@dataclass(slots=True)
class SimResult:
    requests: list[SimRequest]  # finished first (in finishing order), then unfinished
    decode_step_end_s: array[float]
    prefill_token_s: array[float]
    preemptions: int
    steps: int
    timeline: Timeline
    sim_time_s: float
    tracks_prefixes: bool = False  # requests carried their prompts' identity
    most_decoders: int = 0  # the largest decoding batch a step ran

    @property
    def predicted_hit_ratio(self) -> float | None:
        """Prompt tokens a prefix cache served over prompt tokens, of the finished requests
        (the server's cached / prompt tokens); None when prompts carried no identity."""
        if not self.tracks_prefixes:
            return None
        done = [r for r in self.requests if r.finish_s is not None]
        total = sum(r.prompt_tokens for r in done)
        return sum(r.cached_tokens for r in done) / total if total else None

    def token_times(self, r: SimRequest) -> list[float]:
        out: list[float] = []
        for source, start, count in r.pieces:
            table = self.decode_step_end_s if source == DECODE else self.prefill_token_s
            out.extend(table[start : start + count])
        return out


class Engine:
    def __init__(
        self,
        model: StepTimeModel,
        policy: Policy,
        max_steps: int = DEFAULT_MAX_STEPS,
        requests: RequestModel = PLAIN,
    ) -> None:
        self.model = model
        self._ubatch_s = model.extra_ubatch_s
        self._split_s = model.split_decode_s
        self.scheduler: Scheduler = make_scheduler(policy)
        self.running = Running(
            KVBlockManager.for_tokens(policy.kv_capacity_tokens, policy.block_tokens)
        )
        self.costs = requests.costs
        self._overhead_s = requests.costs.request_overhead_s
        self._per_token_s = requests.costs.request_overhead_per_token_s
        # With prompt identities, the scheduler's prefix cache hears of each step and finish.
        self.prompts = prompts = requests.prompts
        self._prefixes: BatchScheduler | None = None
        if prompts is not None and isinstance(self.scheduler, BatchScheduler):
            self._prefixes = self.scheduler
            self.scheduler.track_prefixes(self.running)
        batches = self.scheduler if isinstance(self.scheduler, BatchScheduler) else None
        self._drains = batches is not None and batches.drains_queue
        self._bursts = batches is not None and batches.burst_together
        self._repeats = batches is not None and batches.repeats_decode_only
        self.max_steps = max_steps
        # A measured step time answers for so many decoders: each batch larger than any
        # before is checked as a step reaches it, so a load whose batch no one can know
        # ahead (an open loop) is refused only by a batch it runs.
        self._limited = model if isinstance(model, BatchLimited) else None
        self.most_decoders = 0
        self.waiting: deque[SimRequest] = deque()
        self.done: list[SimRequest] = []
        self.steps = 0
        self.timeline = Timeline.empty()
        self._events: list[tuple[float, int, SimRequest]] = []  # arrivals
        self._seq = itertools.count()
        self._batch: Batch | None = None  # the step in flight
        self._batch_end_s = 0.0
        self.users: ClosedLoopUsers | ChatUsers | None = None

    def _identify(self, r: SimRequest) -> SimRequest:
        """`r` with its spec's prompt identity (injected requests have none)."""
        assert self.prompts is not None
        if r.spec >= 0:
            r.prompt = self.prompts[r.spec]
        return r

    def push(self, t: float, r: SimRequest) -> None:
        """`r`, sent at `t`, reaches the scheduler its request overhead later."""
        if self.prompts is not None:
            self._identify(r)
        seen = t + self._overhead_s + self._per_token_s * r.prompt_tokens
        heapq.heappush(self._events, (seen, next(self._seq), r))

    def push_all(self, requests: Iterable[SimRequest]) -> None:
        """Each at its arrival time, in one heapify (the same order as a push each)."""
        d, k, seq = self._overhead_s, self._per_token_s, self._seq
        if self.prompts is not None:
            requests = [self._identify(r) for r in requests]
        if k and self._bursts:
            self._events.extend(burst_seen(requests, d, k, seq))
        elif k:
            self._events.extend(
                (r.arrival_s + d + k * r.prompt_tokens, next(seq), r) for r in requests
            )
        else:
            self._events.extend((r.arrival_s + d, next(seq), r) for r in requests)
        heapq.heapify(self._events)

    def run(self, max_time_s: float) -> float:
        """Handle events in time order until none are left (or past `max_time_s`); the end time."""
        now = 0.0
        events = self._events
        while events or self._batch is not None:
            if self._batch is not None and (not events or self._batch_end_s < events[0][0]):
                now = self._batch_end_s
                if now > max_time_s:
                    break
                self._end_step(now)
            else:
                now, _, r = heapq.heappop(events)
                if now > max_time_s:
                    break
                self.waiting.append(r)
                if self._drains and events and events[0][0] == now:
                    continue  # the server takes every queued task before its next step
            if self._batch is None:
                running = self.running
                if (
                    self._repeats
                    and running.decode.count
                    and not (self.waiting or running.prefilling)
                ):
                    now = self._decode_only(now, max_time_s)
                if self._batch is None:
                    self._start_step(now)
        return now

    def _decode_only(self, t: float, max_time_s: float) -> float:
        """Decode-only steps from `t` (nothing waits, nothing is prefilling) until a request
        arrives; the time it stopped at, with a step in flight, or with none where the next
        is the general path's to start (the cache may overflow, the step limit, no decoder
        left). The same arithmetic as `_start_step` and `_end_step`, in the same order, so
        every time is the same to the bit.

        Most steps of a long run are these. Inlined here, with the counters in locals (one
        call a step, the step-time model's), they cost about a third of the general path's
        scheduler, step and end-of-step calls (benchmarks/sim_speed.py)."""
        running, step_time, tl = self.running, self.model.step_time_s, self.timeline
        # the timeline's appends, bound once
        t_s, batches, kv_used, queue = (
            tl.t_s.append,
            tl.batches.append,
            tl.kv_blocks_used.append,
            tl.queue_lengths.append,
        )
        decode, kv, ends = running.decode, running.kv, running.decode_end_s
        phase, block, finish_at = running.phase, running.block_tokens, running.finish_at
        cap = kv.capacity_blocks if kv.capacity_blocks is not None else NO_CAP
        steps, last, used, count, d = (
            self.steps,
            self.max_steps,
            kv.used_blocks,
            decode.count,
            running.decode_steps,
        )
        # A step ends here when strictly before the next arrival (on a tie the arrival goes
        # first: the heap's order, see the module's docstring) and not past max_time_s: one
        # comparison, with the first float past max_time_s. The next arrival stays put until
        # a decoder finishes (its user may send another).
        past = math.nextafter(max_time_s, math.inf)
        stop = min(self._events[0][0], past) if self._events else past
        if count > self.most_decoders and steps < last and used + count <= cap:
            self._reached(count, t)  # decoders only leave this loop: its first step is largest
        while count and steps < last and used + count <= cap:
            steps += 1
            end = t + step_time(NO_PREFILL, decode)
            t_s(t)
            batches(count)
            kv_used(used)
            queue(0)
            if end >= stop:
                self._batch, self._batch_end_s = DECODE_ONLY, end
                break
            ends.append(end)  # end_decode_step, inlined
            used += phase[-d % block]
            decode.context_sum += count
            finished = finish_at.pop(d, None)
            d += 1
            running.decode_steps = d  # a model's per-decoder contexts read it
            t = end
            if finished:
                kv.used_blocks = used
                self._finish(finished, t)
                used, count = kv.used_blocks, decode.count
                stop = min(self._events[0][0], past) if self._events else past
        self.steps, kv.used_blocks = steps, used
        return t

    def _start_step(self, t: float) -> None:
        running = self.running
        batch = self.scheduler.next_batch(self.waiting, running)
        if batch is None:
            return
        self.steps += 1
        if self.steps > self.max_steps:
            raise SimulationTooLarge(
                f"the simulation passed its limit of {self.max_steps} engine steps at "
                f"t = {t:.4g} s; raise it with {{max_steps}} or simulate a smaller load"
            )
        decode = running.decode if batch.decodes else NO_DECODES
        if decode.count > self.most_decoders:
            self._reached(decode.count, t)
        chunks = batch.chunks
        prefill = [(k, r.prefilled) for r, k in chunks] if chunks else NO_PREFILL
        dt = self.model.step_time_s(prefill, decode)
        if batch.ubatches > 1:
            dt += (batch.ubatches - 1) * self._ubatch_s
            if batch.decode_groups:
                dt += self._split_s(batch.decode_groups)
        size = decode.count + len(chunks)
        tl = self.timeline
        tl.t_s.append(t)
        tl.batches.append(size)
        tl.kv_blocks_used.append(running.kv.used_blocks)
        tl.queue_lengths.append(len(self.waiting))
        self._batch = batch
        self._batch_end_s = t + dt

    def _reached(self, count: int, t: float) -> None:
        """The step starting at `t` decodes `count` sequences, more than any before: past
        the step time's limit it is refused, naming the request that joined last."""
        self.most_decoders = count
        m = self._limited
        limit = m.batch_limit if m is not None else None
        if m is None or limit is None or count <= limit:
            return
        decoders = (r for r in self.running.requests.values() if r.decode_from >= 0)
        r = max(decoders, key=lambda r: (r.decode_from, r.admit_order))
        m.check_batch(
            count,
            f"at t = {t:.3f} s, request {r.id} (sent at {r.arrival_s:.3f} s) joined the "
            "decoding batch, and ",
        )

    def _end_step(self, t: float) -> None:
        batch, running = self._batch, self.running
        assert batch is not None
        self._batch = None
        finished = running.end_decode_step(t) if batch.decodes and running.decode.count else ()
        if batch.chunks:
            finished = [*finished, *running.end_prefill_chunks(batch.chunks, t)]
            if self._prefixes is not None:
                self._prefixes.after_prefill(batch.chunks)
        if finished:
            self._finish(finished, t)

    def _finish(self, finished: Sequence[SimRequest], t: float) -> None:
        """Retire the requests done at `t` (decoders first, then prompts), in admission order."""
        if len(finished) > 1:
            finished = sorted(finished, key=lambda r: r.admit_order)
        running, prefixes = self.running, self._prefixes
        t_done = t + self.costs.finish_overhead_s
        for r in finished:
            if prefixes is not None:
                prefixes.leaving()
            running.remove(r)
            if prefixes is not None:
                prefixes.finished(r, t)
            r.finish_s = t_done
            self.done.append(r)
            nxt = self.users.follow_up(r, t_done) if self.users is not None else None
            if nxt is not None:
                self.push(nxt.arrival_s, nxt)  # at t, or a think time after it


def burst_seen(
    requests: Iterable[SimRequest], d: float, k: float, seq: Iterator[int]
) -> list[tuple[float, int, SimRequest]]:
    """Heap events for a server whose loop starts a step a few ms after a request wakes it
    (llama-server's `burst_together`): the requests sent at one instant (a trace's burst,
    a closed loop's first) are seen together, when the last of them is, so they join one
    step. Its client sends a burst's requests a fraction of a ms apart, and the
    server's loop starts a step a few ms after the first one reached it (llama-server,
    mooncake-conv's 10 at one instant: the first 6, sent over 1.4 ms, shared one step): by
    prompt length alone (`k` a token) the shortest would run a step of its own first."""
    by_instant: dict[float, list[SimRequest]] = {}
    for r in requests:
        by_instant.setdefault(r.arrival_s, []).append(r)
    out: list[tuple[float, int, SimRequest]] = []
    for t, burst in by_instant.items():
        seen = t + d + k * max(r.prompt_tokens for r in burst)
        out.extend((seen, next(seq), r) for r in burst)
    return out


def simulate(
    arrivals: list[Arrival],
    model: StepTimeModel,
    policy: Policy,
    users: ClosedLoop | Chats | None = None,
    max_time_s: float = float("inf"),
    max_steps: int = DEFAULT_MAX_STEPS,
    requests: RequestModel = PLAIN,
) -> SimResult:
    """Run `arrivals` (and closed-loop `users` or conversations) to completion, or to
    `max_time_s`.

    `requests`: per-request serving costs beside the steps, and each request spec's prompt
    identity (then the policy reuses cached prefixes and the result predicts a hit ratio)."""
    engine = Engine(model, policy, max_steps, requests)
    ids = itertools.count()
    # Paused from the first request made: the collector would rescan the growing heap of
    # requests (72,000 an hour at 20/s) several times before the run begins.
    with gc_paused(long_lived=True):  # many small acyclic objects, kept in the result
        engine.push_all(
            SimRequest(
                next(ids), a.arrival_s, a.prompt_tokens, a.output_tokens, a.injected, spec=a.spec
            )
            for a in arrivals
        )
        if isinstance(users, Chats):
            engine.users = ChatUsers(users, ids)
            engine.push_all(engine.users.first_requests())
        elif users is not None and users.users > 0:
            engine.users = ClosedLoopUsers(users, ids)
            engine.push_all(engine.users.first_requests())
        end_s = engine.run(max_time_s)
    running = engine.running
    unfinished = list(running.requests.values()) + list(engine.waiting)
    for r in list(running.requests.values()):
        running.remove(r)  # closes its decode run, so its token times are complete
    return SimResult(
        engine.done + unfinished,
        running.decode_end_s,
        running.prefill_token_s,
        engine.scheduler.preemptions,
        engine.steps,
        engine.timeline,
        end_s,
        requests.prompts is not None,
        engine.most_decoders,
    )
