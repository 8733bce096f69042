"""The fake vLLM's /metrics (fake_vllm.py): vLLM 0.32's own page, its numbers the fake's.

The page is the captured one (data/vllm-0.32-cpu-metrics-idle.txt, a copy of
../shared/fixtures/vllm-0.32-cpu/metrics-idle.txt: every family, label and bucket bound a
vLLM 0.32 CPU server publishes), read by prometheus_client's parser and written back by
its exposition code. The series the fake keeps (`VllmBooks`) replace the captured values,
counted where vLLM counts them (v1/metrics/stats.py, loggers.py):

  vllm:iteration_tokens_total      one observation per step that gave tokens: the prompt
                                   tokens computed for requests sampled first in it plus
                                   the tokens sampled
  vllm:prefix_cache_queries/hits   at a request's first schedule: its prompt tokens, and
                                   those found in whole cached blocks
  vllm:prompt_tokens               at its first token; vllm:generation_tokens at each token
  vllm:request_prefill_time_seconds, vllm:request_queue_time_seconds   at its end
  vllm:cache_config_info           the script's block_size and num_gpu_blocks
The model_name label is the fake's model. Every other series keeps the captured value.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client.core import Metric

FIXTURE = "vllm-0.32-cpu-metrics-idle.txt"
COUNTERS = (
    "prompt_tokens",
    "generation_tokens",
    "prefix_cache_queries",
    "prefix_cache_hits",
    "num_preemptions",
)
HISTOGRAMS = (
    "iteration_tokens_total",
    "request_prefill_time_seconds",
    "request_queue_time_seconds",
)


@dataclass(slots=True)
class VllmBooks:
    """What the fake engine counted: counters by vLLM's name, histograms' observations."""

    counters: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0.0))
    observed: dict[str, list[float]] = field(default_factory=lambda: {h: [] for h in HISTOGRAMS})
    running: int = 0
    waiting: int = 0

    def count(self, name: str, by: float) -> None:
        self.counters[name] += by

    def observe(self, name: str, value: float) -> None:
        self.observed[name].append(value)


@functools.cache
def captured() -> tuple[Metric, ...]:
    """The captured page's families, parsed once."""
    from importlib.resources import files

    from prometheus_client.parser import text_string_to_metric_families

    text = (files("inferlab.testing") / "data" / FIXTURE).read_text(encoding="utf-8")
    return tuple(text_string_to_metric_families(text))


def _histogram_value(sample: str, labels: dict[str, str], xs: list[float]) -> float | None:
    """A histogram sample's value from the observations (None: not a histogram sample)."""
    if sample.endswith("_count"):
        return float(len(xs))
    if sample.endswith("_sum"):
        return float(sum(xs))
    if sample.endswith("_bucket"):
        bound = math.inf if labels["le"] == "+Inf" else float(labels["le"])
        return float(sum(1 for x in xs if x <= bound))
    return None


def _value(books: VllmBooks, family: str, sample: str, labels: dict[str, str]) -> float | None:
    """The fake's value for one sample of a vLLM family (None: keep the captured one)."""
    name = family.removeprefix("vllm:")
    if name in COUNTERS and sample.endswith("_total"):
        return books.counters[name]
    if name in HISTOGRAMS:
        return _histogram_value(sample, labels, books.observed[name])
    gauges = {"num_requests_running": books.running, "num_requests_waiting": books.waiting}
    return float(gauges[name]) if name in gauges else None


@dataclass(frozen=True, slots=True)
class PageLabels:
    """The labels the fake states: its model, and its cache config."""

    model: str
    block_size: int
    num_gpu_blocks: int

    def of(self, family: str, labels: dict[str, str]) -> dict[str, str]:
        out = dict(labels)
        if "model_name" in out:
            out["model_name"] = self.model
        if family == "vllm:cache_config_info":
            out["block_size"] = str(self.block_size)
            out["num_gpu_blocks"] = str(self.num_gpu_blocks)
            out["kv_cache_size_tokens"] = str(self.block_size * self.num_gpu_blocks)
        return out


def families(books: VllmBooks, page: PageLabels) -> Iterator[Metric]:
    """The captured families with the fake's values and labels."""
    from prometheus_client.core import Metric

    for fam in captured():
        m = Metric(fam.name, fam.documentation, fam.type)
        for s in fam.samples:
            v = _value(books, fam.name, s.name, s.labels) if fam.name.startswith("vllm:") else None
            m.add_sample(s.name, page.of(fam.name, s.labels), s.value if v is None else v)
        yield m


def render(books: VllmBooks, page: PageLabels) -> bytes:
    """The /metrics body."""
    from prometheus_client import CollectorRegistry, generate_latest

    class _Page:
        def collect(self) -> Iterator[Metric]:
            return families(books, page)

    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Page())
    return bytes(generate_latest(reg))
