"""The fake server's /metrics: counters it advances itself, as an engine would.

A step clock ticks every `tpot_s` while any request is in flight (an engine
runs one forward pass per step for the whole batch); the running batch is the
number of in-flight streams. Published in llama.cpp's or vLLM's dialect,
rendered by prometheus_client's own exposition code, with the quirks that
matter: llama.cpp counts generated tokens only when a request ends, vLLM as
each token is produced, and vLLM's engine steps are its iteration histogram's
count. vLLM's MFU counters grow by a scripted `read_bytes_per_step`.

`vllm-kv` is vLLM short of KV blocks, scripted per request as it arrives: preempted
`KV_PREEMPTIONS` times (vllm:num_preemptions) and half its prompt's tokens found in the
prefix cache (vllm:prefix_cache_hits of prefix_cache_queries). Every family the vLLM
dialects publish is one the captured vLLM 0.32 page has, with its labels
(tests/servermetrics/test_fake_vllm.py holds them to it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiohttp import web
    from prometheus_client.core import Metric

    from inferlab.testing.fake_stream import WriteLog

METRICS_DIALECTS = ("none", "llamacpp", "vllm", "vllm-spec", "vllm-kv")
# vllm-spec: a speculative decoder in vLLM's spec_decode_* names: one draft of SPEC_TOKENS
# per step, SPEC_ACCEPTED of them accepted (acceptance 2/3, mean acceptance length 3).
SPEC_TOKENS, SPEC_ACCEPTED = 3, 2
KV_PREEMPTIONS = 2  # vllm-kv: preemptions of each request
# vLLM's cache config as the captured CPU server stated it (a few of its labels)
CACHE_INFO = {
    "block_size": "128",
    "enable_prefix_caching": "True",
    "engine": "0",
    "num_gpu_blocks": "364",
}
KV_CAPACITY_TOKENS = 46592  # as the captured vLLM CPU build: 364 blocks x 128
ITL_BOUNDS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
TTFT_BOUNDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
E2E_BOUNDS = (0.3, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass(slots=True)
class _Hist:
    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def observe(self, x: float) -> None:
        if not self.counts:
            self.counts = [0] * len(self.bounds)
        for i, b in enumerate(self.bounds):
            if x <= b:
                self.counts[i] += 1
        self.total += x
        self.n += 1

    def buckets(self) -> list[tuple[str, float]]:
        counts = self.counts or [0] * len(self.bounds)
        return [(str(b), float(c)) for b, c in zip(self.bounds, counts, strict=True)] + [
            ("+Inf", float(self.n))
        ]


@dataclass(slots=True)
class _Live:
    prompt_tokens: int
    log: Callable[[], list[int]]  # the handler's write times (perf_counter_ns), as they grow
    recv_ns: int

    @property
    def writes(self) -> list[int]:
        return self.log()


@dataclass(slots=True)
class FakeEngine:
    """The books of a pretend engine. The handler's own write log is the truth it reads:
    tokens in flight are counted live (vLLM) or when the request ends (llama.cpp)."""

    dialect: str
    tpot_s: float
    read_bytes_per_step: float = 285e6
    flops_per_step: float = 1.1e9
    busy_s: float = 0.0  # time with something in flight, up to `since`
    since: float = field(default_factory=time.perf_counter)
    live: dict[int, _Live] = field(default_factory=dict)
    prompt_tokens: int = 0
    finished_tokens: int = 0
    ttft: _Hist = field(default_factory=lambda: _Hist(TTFT_BOUNDS))
    itl: _Hist = field(default_factory=lambda: _Hist(ITL_BOUNDS))
    e2e: _Hist = field(default_factory=lambda: _Hist(E2E_BOUNDS))
    lock: threading.Lock = field(default_factory=threading.Lock)
    speculative: bool = False  # publish spec_decode_* counters (vllm-spec)
    kv_starved: bool = False  # vllm-kv: every request preempted, half its prompt cached
    preemptions: int = 0
    prefix_hit_tokens: int = 0

    def _advance(self, now: float) -> None:
        if self.live:
            self.busy_s += now - self.since
        self.since = now

    def start(
        self, key: int, prompt_tokens: int, log: Callable[[], list[int]], recv_ns: int
    ) -> None:
        with self.lock:
            self._advance(time.perf_counter())
            self.live[key] = _Live(prompt_tokens, log, recv_ns)
            self.prompt_tokens += prompt_tokens
            if self.kv_starved:
                self.preemptions += KV_PREEMPTIONS
                self.prefix_hit_tokens += prompt_tokens // 2

    def finish(self, key: int) -> None:
        with self.lock:
            self._advance(time.perf_counter())
            r = self.live.pop(key)
            w = r.writes
            self.finished_tokens += len(w)
            if w:
                self.ttft.observe((w[0] - r.recv_ns) / 1e9)
                for a, b in zip(w, w[1:], strict=False):
                    self.itl.observe((b - a) / 1e9)
            self.e2e.observe((time.perf_counter_ns() - r.recv_ns) / 1e9)

    def read(self) -> tuple[int, int, int, int]:
        """(steps, running, generated tokens as the dialect counts them, KV tokens in use)."""
        with self.lock:
            self._advance(time.perf_counter())
            steps = int(self.busy_s / self.tpot_s) if self.tpot_s > 0 else 0
            in_flight = sum(len(r.writes) for r in self.live.values())
            generated = self.finished_tokens + (in_flight if self.dialect == "vllm" else 0)
            kv = sum(r.prompt_tokens + len(r.writes) for r in self.live.values())
            return steps, len(self.live), generated, kv

    def collector(self) -> _Collector:
        return _Collector(self)


class _Collector:
    """A prometheus_client custom collector: values read at scrape time."""

    def __init__(self, engine: FakeEngine) -> None:
        self.e = engine

    def collect(self) -> Iterator[Metric]:
        yield from (_llamacpp(self.e) if self.e.dialect == "llamacpp" else _vllm(self.e))


def _llamacpp(e: FakeEngine) -> Iterator[Metric]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    steps, running, generated, _ = e.read()
    p = "llamacpp:"
    yield CounterMetricFamily(f"{p}prompt_tokens", "Prompt tokens", value=e.prompt_tokens)
    yield CounterMetricFamily(f"{p}prompt_tokens_cached", "Cached prompt tokens", value=0)
    yield CounterMetricFamily(f"{p}tokens_predicted", "Generated", value=generated)
    yield CounterMetricFamily(f"{p}n_decode", "llama_decode() calls", value=steps)
    yield CounterMetricFamily(f"{p}spec_decode_num_draft_tokens", "Draft tokens", value=0)
    yield CounterMetricFamily(f"{p}spec_decode_num_accepted_tokens", "Accepted", value=0)
    yield GaugeMetricFamily(f"{p}requests_processing", "Processing", value=running)
    yield GaugeMetricFamily(f"{p}requests_deferred", "Deferred", value=0)


def _vllm(e: FakeEngine) -> Iterator[Metric]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    steps, running, generated, kv = e.read()
    lab = (["engine", "model_name"], ["0", "fake"])

    def counter(name: str, value: float) -> CounterMetricFamily:
        m = CounterMetricFamily(f"vllm:{name}", name, labels=lab[0])
        m.add_metric(lab[1], value)
        return m

    def gauge(name: str, value: float) -> GaugeMetricFamily:
        m = GaugeMetricFamily(f"vllm:{name}", name, labels=lab[0])
        m.add_metric(lab[1], value)
        return m

    def hist(name: str, h: _Hist) -> HistogramMetricFamily:
        m = HistogramMetricFamily(f"vllm:{name}", name, labels=lab[0])
        m.add_metric(lab[1], h.buckets(), sum_value=h.total)
        return m

    yield gauge("num_requests_running", running)
    yield gauge("num_requests_waiting", 0)
    yield gauge("kv_cache_usage_perc", kv / KV_CAPACITY_TOKENS)
    # labelled by the engine and the cache config only, as vLLM's (no model_name)
    info = GaugeMetricFamily("vllm:cache_config_info", "cache config", labels=list(CACHE_INFO))
    info.add_metric(list(CACHE_INFO.values()), 1)
    yield info
    yield counter("prompt_tokens", e.prompt_tokens)
    yield counter("generation_tokens", generated)
    yield counter("num_preemptions", e.preemptions)
    yield counter("prefix_cache_queries", e.prompt_tokens)
    yield counter("prefix_cache_hits", e.prefix_hit_tokens)
    yield counter("estimated_read_bytes_per_gpu", steps * e.read_bytes_per_step)
    yield counter("estimated_flops_per_gpu", steps * e.flops_per_step)
    if e.speculative:
        yield counter("spec_decode_num_drafts", steps)
        yield counter("spec_decode_num_draft_tokens", steps * SPEC_TOKENS)
        yield counter("spec_decode_num_accepted_tokens", steps * SPEC_ACCEPTED)
    it = HistogramMetricFamily("vllm:iteration_tokens_total", "tokens per step", labels=lab[0])
    it.add_metric(lab[1], [("+Inf", float(steps))], sum_value=float(generated))
    yield it
    yield hist("time_to_first_token_seconds", e.ttft)
    yield hist("inter_token_latency_seconds", e.itl)
    yield hist("e2e_request_latency_seconds", e.e2e)


def engine_for(metrics: str, tpot_s: float) -> FakeEngine:
    """The engine behind --metrics: its dialect, speculative with vllm-spec, short of KV
    blocks with vllm-kv."""
    dialect = metrics.split("-", 1)[0]
    spec, kv = metrics == "vllm-spec", metrics == "vllm-kv"
    return FakeEngine(dialect, tpot_s, speculative=spec, kv_starved=kv)


# an aiohttp request handler (as fake_server's)
Handler = Callable[["web.Request"], Awaitable["web.StreamResponse"]]


def metered(engine: FakeEngine, handler: Handler, log: WriteLog) -> Handler:
    """Wrap the completions handler: the request enters the engine's books on arrival and
    leaves when its stream ends, its tokens read from the handler's own write log."""
    from inferlab.bench.prompt_text import prompt_sha1

    count = iter(range(1 << 62))

    async def wrapped(request: web.Request) -> web.StreamResponse:
        body = await request.json()  # aiohttp caches the body: the handler reads it again
        chat = request.path.endswith("chat/completions")
        prompt = str(body["messages"][-1]["content"] if chat else body.get("prompt"))
        sha, before = prompt_sha1(prompt), log.get(prompt_sha1(prompt))

        def writes() -> list[int]:  # the handler logs this request under its prompt's sha1
            entry = log.get(sha)
            return [] if entry is None or entry is before else list(entry["write_ns"])

        key = next(count)
        engine.start(key, len(prompt.split()), writes, time.perf_counter_ns())
        try:
            return await handler(request)
        finally:
            engine.finish(key)

    return wrapped


def render(engine: FakeEngine) -> bytes:
    """The /metrics body, in the engine's dialect."""
    from prometheus_client import CollectorRegistry, generate_latest

    reg = CollectorRegistry(auto_describe=False)
    reg.register(engine.collector())
    return bytes(generate_latest(reg))


async def metrics_response(engine: FakeEngine) -> web.Response:
    from aiohttp import web
    from prometheus_client import CONTENT_TYPE_LATEST

    return web.Response(body=render(engine), headers={"Content-Type": CONTENT_TYPE_LATEST})
