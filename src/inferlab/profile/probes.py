"""The probes, sent with bench's streamed client; each returns its Observations.

Times are the client's socket-read stamps (bench/client.py), on one monotonic clock.
  lone     TTFT of a request alone, at several prompt lengths (= request cost + prefill step)
  prefix   the same, after a request that left its first K tokens in a slot's cache
           (K as llama-server reports it: timings.cache_n; vLLM: its prefix cache, K
           the prefix_cache_hits its /metrics counted for the request)
  decode   D streams started together: the gaps while all D decode (every gap, median)
  context  the same after a long prompt: the step at a larger context
  mixed    D streams decoding, then a prompt of P tokens: the gap each decoder sees at the
           prompt's first token is the step that carried the prompt
  split    D streams in slots that are not consecutive: llama.cpp computes each in a
           ubatch of its own (specs/llamacpp_ubatches.py), so the gap prices a ubatch
Every request names its slot (llama-server's `id_slot`), so each probe's step has the
ubatches it is recorded with: streams in slots 0..D-1 are one ubatch, a prompt beside
them a second, streams in slots 0, 2, 4... one each. A vLLM server has no slots and no
ubatches (`Client.slots` False): nothing is pinned, and a lone or prefix request's step
is the prefill time vLLM's /metrics recorded for it (profile/vllm_server.py).
A request that fails ends the profile (ProbeError: one line, nothing written).
"""

from __future__ import annotations

import asyncio
import bisect
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import aiohttp

from inferlab.bench.client import Endpoint, stream_request
from inferlab.bench.prompt_text import make_block, make_prompt
from inferlab.errors import InferlabError
from inferlab.profile.record import Observation, Probe
from inferlab.profile.serverstep import StepSampler
from inferlab.profile.vllm_server import VllmCounters, counted_after, fetch_counters
from inferlab.records import RequestRecord
from inferlab.specs.llamacpp_ubatches import DEFAULT_N_UBATCH, count_ubatches, split_ubatches

WAIT_LIMIT_S = 120.0  # the longest a probe waits for a stream to move
PROBE_TIMEOUT_S = 300.0  # a probe request's bound (16 long prompts at once take ~45 s here)


def ubatches_of(seqs: Sequence[tuple[int, int]]) -> int:
    """The ubatches of a probe's step: (slot, tokens) in batch order, at the default n_ubatch."""
    return count_ubatches(seqs, DEFAULT_N_UBATCH)


def with_ubatches(o: Observation, seqs: Sequence[tuple[int, int]], decoders: int) -> Observation:
    """`o` with its step's ubatches and the decoders in each (the first `decoders` of
    `seqs`: (slot, tokens) in batch order, at the default n_ubatch)."""
    count, groups = split_ubatches(seqs, DEFAULT_N_UBATCH, decoders)
    return replace(o, ubatches=count, decode_groups=groups)


class ProbeError(InferlabError):
    """The server failed a probe (died, refused, cut a stream)."""


@dataclass(slots=True)
class Client:
    session: aiohttp.ClientSession
    endpoint: Endpoint  # cache_prompt off: every probe prompt is unique
    root_url: str
    t0_ns: int
    sampler: StepSampler
    seed: int = 0
    sent: int = 0
    # llama-server's slots: each probe request names one (id_slot), and a step is cut into
    # ubatches by them; vLLM has none: nothing is pinned, and a step is one pass
    slots: bool = True
    counted: bool = False  # vLLM: its /metrics counts each lone request (vllm_server.py)
    windows: list[tuple[str, VllmCounters]] = field(default_factory=list)  # (probe, counts)

    def next_seed(self) -> int:
        self.seed += 1
        return self.seed

    async def prompt(self, tokens: int, shared: str = "") -> tuple[str, int]:
        """A unique prompt of `tokens` tokens (as /tokenize counts them)."""
        p = await make_prompt(
            self.session,
            self.root_url,
            self.endpoint.model,
            tokens,
            7919 * self.next_seed(),
            shared,
        )
        return p.text, p.tokens if p.tokens is not None else tokens

    def record(self, prompt_tokens: int, max_tokens: int, probe: str) -> RequestRecord:
        self.sent += 1
        return RequestRecord(self.sent, probe, "measure", prompt_tokens, max_tokens)

    def endpoint_for(self, cache: bool = False, slot: int | None = None) -> Endpoint:
        """The probes' endpoint with the server's prompt cache on or off, pinned to `slot`."""
        ep = replace(self.endpoint, cache_prompt=cache) if cache else self.endpoint
        if slot is not None and self.slots:
            ep = ep.pinned_to(slot)
        return ep

    async def send(
        self, text: str, rec: RequestRecord, cache: bool = False, slot: int | None = None
    ) -> RequestRecord:
        """Stream one request into `rec` (in slot `slot`); ProbeError if it fails."""
        await stream_request(self.session, self.endpoint_for(cache, slot), rec, text, self.t0_ns)
        if not rec.ok:
            raise ProbeError(
                f"the server failed a {rec.level} probe request "
                f"({rec.error or f'HTTP {rec.http_status}'}); is it still running?"
            )
        return rec

    async def send_counted(
        self, text: str, rec: RequestRecord, cache: bool = False, slot: int | None = None
    ) -> tuple[RequestRecord, VllmCounters | None]:
        """`send`, and what vLLM's /metrics counted while it ran (None: not counted)."""
        before = await fetch_counters(self.session, self.root_url) if self.counted else None
        rec = await self.send(text, rec, cache, slot)
        if before is None:
            return rec, None
        counted = await counted_after(self.session, self.root_url, before)
        if counted is not None:
            self.windows.append((rec.level, counted))
        return rec, counted


def summarise(
    probe: Probe, samples_s: Sequence[float], decoders: int, context: int, prompt: int, cached: int
) -> Observation:
    """Median and quartiles of the samples (never the fastest)."""
    xs = sorted(samples_s)
    q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
    return Observation(
        probe, decoders, context, prompt, cached, statistics.median(xs), q[0], q[2], len(xs)
    )


def ttft_s(rec: RequestRecord) -> float:
    return (rec.event_ns[0] - rec.send_ns) / 1e9


def with_server_prefill(o: Observation, recs: Sequence[RequestRecord]) -> Observation:
    """A TTFT probe's observation with the median of the server's own prefill time
    (llama.cpp's timings.prompt_ms), where every request reported it."""
    ms = [r.server_prompt_ms for r in recs if r.server_prompt_ms is not None]
    if not ms or len(ms) < len(recs):
        return o
    return replace(o, server_step_s=statistics.median(ms) / 1e3)


def with_counted_prefill(o: Observation, counts: Sequence[VllmCounters | None]) -> Observation:
    """A TTFT probe's observation with the median of vLLM's own prefill time
    (request_prefill_time_seconds) over the requests its /metrics counted alone."""
    alone = [d.prefill_s for d in counts if d is not None and d.alone]
    return replace(o, server_step_s=statistics.median(alone)) if alone else o


def counted_hits(counted: VllmCounters | None) -> int:
    """The prompt tokens vLLM's prefix cache gave a request it counted alone (else 0)."""
    return int(counted.prefix_hits) if counted is not None and counted.alone else 0


async def lone(c: Client, tokens: int, repeats: int) -> Observation:
    recs, counts = [], []
    for _ in range(repeats):
        text, n = await c.prompt(tokens)
        rec, counted = await c.send_counted(text, c.record(n, 1, "lone"))
        recs.append(rec)
        counts.append(counted)
    n = int(statistics.median(r.prompt_tokens or r.prompt_tokens_target for r in recs))
    o = summarise("lone", [ttft_s(r) for r in recs], 0, 0, n, 0)
    o = replace(o, ubatches=ubatches_of([(0, n)])) if c.slots else o
    return with_counted_prefill(with_server_prefill(o, recs), counts)


async def prefix(c: Client, total: int, cached: int, repeats: int) -> Observation:
    """A prompt of `total` tokens whose first `cached` a request before it left in the
    server's cache (llama-server: slot 0; vLLM: its prefix cache, by whole blocks)."""
    recs, news, hits, counts = [], [], [], []
    for _ in range(repeats):
        block = await make_block(
            c.session, c.root_url, c.endpoint.model, cached, c.next_seed() + 10**6
        )
        await c.send(block, c.record(cached, 1, "prefix"), cache=True, slot=0)  # left in slot 0
        text, n = await c.prompt(total, shared=block)
        rec, counted = await c.send_counted(text, c.record(n, 1, "prefix"), cache=True, slot=0)
        hit = rec.cached_prompt_tokens_server or rec.cached_prompt_tokens or counted_hits(counted)
        recs.append(rec)
        counts.append(counted)
        news.append((rec.prompt_tokens or n) - hit)
        hits.append(hit)
    k, n = int(statistics.median(hits)), int(statistics.median(news))
    o = summarise("prefix", [ttft_s(r) for r in recs], 0, 0, n, k)
    o = replace(o, ubatches=ubatches_of([(0, n)])) if c.slots else o
    return with_counted_prefill(with_server_prefill(o, recs), counts)


MIN_GAPS = 8  # gaps needed before a batch's decode step is read from them


def gaps_by_batch(recs: Sequence[RequestRecord], prompt: int) -> dict[int, list[tuple[float, int]]]:
    """Every gap of every stream, by how many streams decoded through it (each stream
    decodes from its first token to its last): {batch: [(gap s, contexts summed)]}.
    A stream that starts mid-way is not counted in the gap its prefill ended, so the
    gaps at the largest batch are plain decode steps."""
    out: dict[int, list[tuple[float, int]]] = {}
    for r in recs:
        ev = r.event_ns
        for j in range(1, len(ev)):
            a, b = ev[j - 1], ev[j]
            live = [s.event_ns for s in recs if s.event_ns[0] <= a and s.event_ns[-1] >= b]
            ctx = sum(prompt + bisect.bisect_right(e, a) for e in live)
            out.setdefault(len(live), []).append(((b - a) / 1e9, ctx))
    return out


def steady_gaps(recs: Sequence[RequestRecord], prompt: int) -> tuple[int, list[float], float]:
    """(the largest batch with MIN_GAPS gaps, those gaps, their mean context per stream);
    the batch is every stream's when they overlapped (a server may start a long prompt
    only after another's prefill, so under load they may not)."""
    by = gaps_by_batch(recs, prompt)
    batch = max((k for k, g in by.items() if len(g) >= MIN_GAPS), default=0)
    rows = by.get(batch, [])
    mean_ctx = statistics.fmean(c for _, c in rows) / batch if rows else float(prompt)
    return batch, [g for g, _ in rows], mean_ctx


def slots_of(probe: Probe, batch: int) -> list[int]:
    """Where a probe's D streams go: slots 0..D-1 (one ubatch), or 0, 2, 4... (`split`)."""
    step = 2 if probe == "split" else 1
    return list(range(0, step * batch, step))


@dataclass(frozen=True, slots=True)
class StreamsRun:
    """One start of D streams: the batch they really decoded at together, its gaps, the
    mean context per stream, and the server's own step over the window (/metrics)."""

    batch: int
    gaps_s: list[float]
    mean_ctx: float
    server_step_s: float | None


async def streams_once(c: Client, probe: Probe, batch: int, prompt: int, output: int) -> StreamsRun:
    """D streams started together, once, in the probe's slots."""
    texts = [await c.prompt(prompt) for _ in range(batch)]
    slots = slots_of(probe, batch)
    async with c.sampler.sampling() as sampler:
        recs = await asyncio.gather(
            *(
                c.send(t, c.record(n, output, probe), slot=k)
                for (t, n), k in zip(texts, slots, strict=True)
            )
        )
    got, gaps, ctx = steady_gaps(recs, prompt)
    start = (c.t0_ns + max(r.event_ns[0] for r in recs)) / 1e9
    step = sampler.step_s(start, (c.t0_ns + min(r.event_ns[-1] for r in recs)) / 1e9)
    return StreamsRun(got, gaps, ctx, step if got == batch else None)


def streams_observation(probe: Probe, batch: int, runs: Sequence[StreamsRun]) -> Observation:
    """The decode step of D streams from the gaps of every run at the largest batch seen
    (and the median of the server's own steps, where it has them)."""
    got = max((r.batch for r in runs), default=0)
    if not got:
        raise ProbeError(f"the {probe} probe at batch {batch} saw no {MIN_GAPS} steady steps")
    kept = [r for r in runs if r.batch == got]
    gaps = [g for r in kept for g in r.gaps_s]
    ctx = statistics.fmean(r.mean_ctx for r in kept)
    o = summarise(probe, gaps, got, round(got * ctx), 0, 0)
    # the streams that decoded together: any `got` of them sit as slots_of(probe, got) do
    o = with_ubatches(o, [(k, 1) for k in slots_of(probe, got)], got)
    o = replace(o, run_medians_s=tuple(statistics.median(r.gaps_s) for r in kept))
    server = [r.server_step_s for r in runs if r.server_step_s is not None]
    return replace(o, server_step_s=statistics.median(server)) if server else o


async def streams(
    c: Client, probe: Probe, batch: int, prompt: int, output: int, repeats: int
) -> Observation:
    """D streams started together, `repeats` times: the decode step from their gaps (and
    from the server's /metrics over the same window, where it has them). The batch kept
    is the largest the streams really decoded at together."""
    runs = [await streams_once(c, probe, batch, prompt, output) for _ in range(repeats)]
    return streams_observation(probe, batch, runs)


async def wait_for(cond: Callable[[], bool], what: str) -> None:
    """Poll until cond() (every 2 ms), at most WAIT_LIMIT_S."""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not cond():
        if time.monotonic() > deadline:
            raise ProbeError(f"the server did not move for {WAIT_LIMIT_S:g} s while {what}")
        await asyncio.sleep(0.002)
