"""Prometheus text from four engines -> one normalised `Snapshot`.

The text is parsed by prometheus_client's own parser (never by hand). Each
dialect then maps its names onto the Snapshot's vocabulary:

- llama.cpp `llama-server --metrics` (`llamacpp:*`): steps are `n_decode_total`
  (one per llama_decode call, every step), while `tokens_predicted_total` moves
  only when a request ends. No KV gauge, no latency histograms.
- vLLM (`vllm:*`): steps are the count of the `iteration_tokens_total` histogram
  (one observation per engine step); KV capacity comes from `cache_config_info`'s
  labels; `--enable-mfu-metrics` adds estimated read bytes and FLOPs.
- SGLang (`sglang:*`, `--enable-metrics`): steps are `cuda_graph_passes_total`
  (every decode forward pass, by mode); preemptions are retracted requests.
- TGI (`tgi_*`): steps are `tgi_batch_inference_count` (prefill + decode calls);
  token counts are the sums of its per-request histograms (moved at request end).

Each engine is one `DialectSpec` block below its mapper, in REGISTRY: adding an
engine is a mapper, one block and its name in vocab.Dialect.

A series an engine does not publish stays None. Several series of one name
(vLLM data-parallel engines, label sets) are summed; SGLang's tensor-parallel
ranks repeat the same numbers, so only rank 0 is read.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from inferlab.errors import InferlabError
from inferlab.servermetrics.snapshot import Histogram, Snapshot
from inferlab.vocab import Dialect


class MetricsError(InferlabError):
    """A /metrics endpoint that gave no usable snapshot; `warning_code` names the bench warning."""

    warning_code = "no_server_metrics"


class MetricsUnparsable(MetricsError):
    """The body is not Prometheus text (HTML, JSON, garbage)."""

    warning_code = "metrics_unparsable"


class UnknownDialect(MetricsUnparsable):
    """Valid Prometheus text, but from no engine inferlab knows (e.g. a bare exporter)."""


@dataclass(slots=True)
class _Index:
    """Samples by name: label sets and values, as the parser gave them."""

    samples: dict[str, list[tuple[dict[str, str], float]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def has(self, name: str) -> bool:
        return name in self.samples

    def total(self, name: str) -> float | None:
        """Sum over label sets; None when the series is absent."""
        got = self.samples.get(name)
        if not got:
            return None
        return float(sum(v for _, v in got))

    def labels(self, name: str) -> list[dict[str, str]]:
        return [lab for lab, _ in self.samples.get(name, [])]

    def histogram(self, name: str) -> Histogram | None:
        """Buckets of `name` summed across label sets (le kept apart); None when absent."""
        buckets: dict[float, float] = defaultdict(float)
        for lab, v in self.samples.get(f"{name}_bucket", []):
            try:
                buckets[float(lab["le"])] += v
            except (KeyError, ValueError):
                continue
        count, total = self.total(f"{name}_count"), self.total(f"{name}_sum")
        if not buckets or count is None:
            return None
        pairs = tuple(sorted(buckets.items()))
        if not math.isinf(pairs[-1][0]):
            pairs = (*pairs, (math.inf, count))
        return Histogram(pairs, count, total or 0.0)


Mapper = Callable[[_Index], dict[str, object]]


@dataclass(frozen=True, slots=True)
class DialectSpec:
    """One engine's /metrics: how to know it, what to read, and how to map it."""

    name: Dialect
    engine: str  # as people write it, for messages
    prefix: str  # its families' common prefix: the lines that say which engine answered
    needs: tuple[str, ...]  # family-name prefixes the mapper reads (the rest is skipped)
    histograms: tuple[str, ...]  # its latency histograms' families (skippable mid-level)
    mapper: Mapper


# The latency histograms' families: half a scrape's parsing (vLLM: 2.5 of 4.6 ms). A bench
# reads them from a level's first and last snapshot only, so the samples between skip them.
_LATENCY = (
    "time_to_first_token_seconds",
    "inter_token_latency_seconds",
    "time_per_output_token_seconds",
    "e2e_request_latency_seconds",
)


def _index(text: str, keep: Callable[[dict[str, str]], bool]) -> _Index:
    from prometheus_client.parser import text_string_to_metric_families

    idx = _Index()
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if keep(s.labels):
                    idx.samples[s.name].append((dict(s.labels), float(s.value)))
    except (ValueError, TypeError, IndexError, KeyError) as e:
        raise MetricsUnparsable(f"not Prometheus text ({type(e).__name__}: {e})") from e
    return idx


def detect_dialect(text: str) -> Dialect | None:
    """The engine whose prefix starts the most lines; None when no known prefix appears."""
    counts = {d.name: text.count("\n" + d.prefix) + text.startswith(d.prefix) for d in SPECS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else None


def _wanted(text: str, prefixes: tuple[str, ...], skip: tuple[str, ...] = ()) -> str:
    """Only the lines of families a dialect reads: vLLM's page is ~50 kB of which we need a
    tenth, and the parser's cost is per line (14 ms -> ~2 ms a scrape). Selection only: every
    kept line still goes through prometheus_client's parser."""
    kept = []
    for line in text.splitlines():
        if line.startswith("#"):
            if not line.startswith("# TYPE "):
                continue  # HELP is prose, never read, and the parser's slowest kind of line
            parts = line.split(None, 3)
            name = parts[2] if len(parts) > 2 else ""
        else:
            name = line.split("{", 1)[0].split(None, 1)[0] if line.strip() else ""
        if name.endswith("_created"):
            continue  # a counter's creation time, never read
        if name.startswith(prefixes) and not (skip and name.startswith(skip)):
            kept.append(line)
    return "\n".join(kept) + "\n"


def _llamacpp(idx: _Index) -> dict[str, object]:
    p = "llamacpp:"
    prompt, cached = (
        idx.total(f"{p}prompt_tokens_total"),
        idx.total(f"{p}prompt_tokens_cached_total"),
    )
    # Older builds published KV gauges; b11434 does not (then they stay None).
    kv_used = idx.total(f"{p}kv_cache_tokens")
    kv_ratio = idx.total(f"{p}kv_cache_usage_ratio")
    capacity = kv_used / kv_ratio if kv_used is not None and kv_ratio else None
    return {
        "steps": idx.total(f"{p}n_decode_total"),
        "generation_tokens": idx.total(f"{p}tokens_predicted_total"),
        "prompt_tokens": prompt,
        "prefix_cache_hit_tokens": cached,
        # prompt_tokens_total excludes the cached ones: the tokens looked up are both.
        "prefix_cache_query_tokens": None if prompt is None or cached is None else prompt + cached,
        "spec_draft_tokens": idx.total(f"{p}spec_decode_num_draft_tokens_total"),
        "spec_accepted_tokens": idx.total(f"{p}spec_decode_num_accepted_tokens_total"),
        "running": idx.total(f"{p}requests_processing"),
        "waiting": idx.total(f"{p}requests_deferred"),
        "kv_cache_usage": kv_ratio,
        "kv_capacity_tokens": capacity,
    }


LLAMACPP = DialectSpec("llamacpp", "llama.cpp", "llamacpp:", ("llamacpp:",), (), _llamacpp)


def _vllm_kv_capacity(idx: _Index) -> float | None:
    """From cache_config_info's labels: kv_cache_size_tokens, else num_gpu_blocks x block_size."""
    total = 0.0
    for lab in idx.labels("vllm:cache_config_info"):
        try:
            total += float(lab["kv_cache_size_tokens"])
            continue
        except (KeyError, ValueError):
            pass
        try:
            total += float(lab["num_gpu_blocks"]) * float(lab["block_size"])
        except (KeyError, ValueError):
            return None
    return total or None


def _vllm(idx: _Index) -> dict[str, object]:
    p = "vllm:"
    kv = idx.total(f"{p}kv_cache_usage_perc")
    if kv is None:
        kv = idx.total(f"{p}gpu_cache_usage_perc")  # before vLLM 0.10
    engines = max(1, len({lab.get("engine") for lab in idx.labels(f"{p}num_requests_running")}))
    itl = idx.histogram(f"{p}inter_token_latency_seconds")
    return {
        "steps": idx.total(f"{p}iteration_tokens_total_count"),
        "generation_tokens": idx.total(f"{p}generation_tokens_total"),
        "prompt_tokens": idx.total(f"{p}prompt_tokens_total"),
        "preemptions": idx.total(f"{p}num_preemptions_total"),
        "prefix_cache_hit_tokens": idx.total(f"{p}prefix_cache_hits_total"),
        "prefix_cache_query_tokens": idx.total(f"{p}prefix_cache_queries_total"),
        "spec_draft_tokens": idx.total(f"{p}spec_decode_num_draft_tokens_total"),
        "spec_accepted_tokens": idx.total(f"{p}spec_decode_num_accepted_tokens_total"),
        "spec_drafts": idx.total(f"{p}spec_decode_num_drafts_total"),
        "estimated_read_bytes": idx.total(f"{p}estimated_read_bytes_per_gpu_total"),
        "estimated_flops": idx.total(f"{p}estimated_flops_per_gpu_total"),
        "running": idx.total(f"{p}num_requests_running"),
        "waiting": idx.total(f"{p}num_requests_waiting"),
        # a fraction per engine: the mean over data-parallel engines, not their sum
        "kv_cache_usage": kv / engines if kv is not None else None,
        "kv_capacity_tokens": _vllm_kv_capacity(idx),
        "ttft_s": idx.histogram(f"{p}time_to_first_token_seconds"),
        "itl_s": itl or idx.histogram(f"{p}time_per_output_token_seconds"),
        "e2e_s": idx.histogram(f"{p}e2e_request_latency_seconds"),
    }


VLLM = DialectSpec(
    "vllm",
    "vLLM",
    "vllm:",
    (
        "vllm:iteration_tokens_total_count",  # its buckets are never read
        "vllm:iteration_tokens_total_sum",
        "vllm:generation_tokens",
        "vllm:prompt_tokens",
        "vllm:num_preemptions",
        "vllm:prefix_cache_",
        "vllm:spec_decode_num_",
        "vllm:estimated_",
        "vllm:num_requests_",
        "vllm:kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc",
        "vllm:cache_config_info",
        "vllm:time_to_first_token_seconds",
        "vllm:inter_token_latency_seconds",
        "vllm:time_per_output_token_seconds",
        "vllm:e2e_request_latency_seconds",
    ),
    tuple(f"vllm:{n}" for n in _LATENCY),
    _vllm,
)


def _sglang(idx: _Index) -> dict[str, object]:
    p = "sglang:"
    return {
        "steps": idx.total(f"{p}cuda_graph_passes_total"),
        "generation_tokens": idx.total(f"{p}generation_tokens_total"),
        "prompt_tokens": idx.total(f"{p}prompt_tokens_total"),
        "preemptions": idx.total(f"{p}num_retracted_requests_total"),
        "prefix_cache_hit_tokens": idx.total(f"{p}cached_tokens_total"),
        "running": idx.total(f"{p}num_running_reqs"),
        "waiting": idx.total(f"{p}num_queue_reqs"),
        "kv_cache_usage": idx.total(f"{p}token_usage"),
        "kv_capacity_tokens": idx.total(f"{p}max_total_num_tokens"),
        "ttft_s": idx.histogram(f"{p}time_to_first_token_seconds"),
        "itl_s": idx.histogram(f"{p}inter_token_latency_seconds")
        or idx.histogram(f"{p}time_per_output_token_seconds"),
        "e2e_s": idx.histogram(f"{p}e2e_request_latency_seconds"),
    }


SGLANG = DialectSpec(
    "sglang", "SGLang", "sglang:", ("sglang:",), tuple(f"sglang:{n}" for n in _LATENCY), _sglang
)


def _tgi(idx: _Index) -> dict[str, object]:
    return {
        # prefill and decode calls are separate forward passes in TGI
        "steps": idx.total("tgi_batch_inference_count_total"),
        "generation_tokens": idx.total("tgi_request_generated_tokens_sum"),
        "prompt_tokens": idx.total("tgi_request_input_length_sum"),
        # "speculated tokens per request": tokens that came from accepted drafts
        "spec_accepted_tokens": idx.total("tgi_request_skipped_tokens_sum"),
        "running": idx.total("tgi_batch_current_size"),
        "waiting": idx.total("tgi_queue_size"),
        # TGI's only inter-token histogram is each request's mean time per token
        "itl_s": idx.histogram("tgi_request_mean_time_per_token_duration"),
        "e2e_s": idx.histogram("tgi_request_duration"),
    }


TGI = DialectSpec(
    "tgi",
    "TGI",
    "tgi_",
    ("tgi_",),
    ("tgi_request_mean_time_per_token_duration", "tgi_request_duration"),
    _tgi,
)

# Every engine inferlab reads, in detection order (a tie goes to the first).
SPECS: tuple[DialectSpec, ...] = (LLAMACPP, VLLM, SGLANG, TGI)
REGISTRY: dict[Dialect, DialectSpec] = {d.name: d for d in SPECS}
DIALECTS: tuple[Dialect, ...] = tuple(REGISTRY)


def _first_rank(labels: dict[str, str]) -> bool:
    return labels.get("tp_rank", "0") == "0"


def parse_metrics(text: str, t_mono_s: float, t_unix_s: float, histograms: bool = True) -> Snapshot:
    """One scrape's text -> Snapshot; MetricsUnparsable / UnknownDialect when it is not one.
    Without `histograms` the latency histograms stay None (and cost nothing to parse)."""
    head = text.lstrip()[:200].lower()
    if not head:
        raise MetricsUnparsable("the /metrics body is empty")
    if head.startswith("<"):
        raise MetricsUnparsable("the /metrics answer is HTML, not Prometheus text")
    if head.startswith(("{", "[")):
        raise MetricsUnparsable("the /metrics answer is JSON, not Prometheus text")
    dialect = detect_dialect(text)
    if dialect is None:
        idx = _index(text, _first_rank)  # garbage raises MetricsUnparsable here
        names = ", ".join(sorted(idx.samples)[:5]) or "no samples"
        known = ", ".join(d.engine for d in SPECS)
        raise UnknownDialect(f"Prometheus text from no known engine ({known}): " + names)
    spec = REGISTRY[dialect]
    idx = _index(_wanted(text, spec.needs, () if histograms else spec.histograms), _first_rank)
    values = spec.mapper(idx)
    return Snapshot(dialect, t_mono_s, t_unix_s, **values)  # type: ignore[arg-type]
