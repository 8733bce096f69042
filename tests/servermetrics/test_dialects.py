"""Every fixture through parse_metrics: real llama.cpp and vLLM bytes, SGLang/TGI by name.

The SGLang and TGI texts in fixtures/ were written by hand from the engines'
documented metric names (SGLang: docs/references/production_metrics.md and
srt/metrics/collector.py; TGI: docs/source/reference/metrics.md), because
neither engine runs on this machine: they test the mapping, not a capture.
"""

from __future__ import annotations

import math

import pytest

from inferlab.servermetrics.dialects import MetricsUnparsable, UnknownDialect, parse_metrics
from inferlab.servermetrics.snapshot import delta
from tests.servermetrics.conftest import fixture_text


def test_llamacpp_during_load() -> None:
    s = parse_metrics(fixture_text("llamacpp", "metrics-during-c4-load.txt"), 1.0, 2.0)
    assert s.dialect == "llamacpp" and (s.t_mono_s, s.t_unix_s) == (1.0, 2.0)
    assert s.steps == 2971  # n_decode_total: one per llama_decode, every step
    assert s.generation_tokens == 5268  # tokens_predicted_total: moves at request end
    assert s.prompt_tokens == 1434
    assert s.prefix_cache_hit_tokens == 16
    assert s.prefix_cache_query_tokens == 1434 + 16
    assert s.running == 4 and s.waiting == 0
    assert (s.spec_draft_tokens, s.spec_accepted_tokens) == (0, 0)
    # what llama.cpp b11434 does not publish is None, never 0
    for name in ("kv_cache_usage", "kv_capacity_tokens", "preemptions", "estimated_read_bytes"):
        assert getattr(s, name) is None, name
    assert s.ttft_s is None and s.itl_s is None and s.e2e_s is None


def test_llamacpp_two_captures_delta() -> None:
    a = parse_metrics(fixture_text("llamacpp", "metrics-after-load.txt"), 0.0, 0.0)
    b = parse_metrics(fixture_text("llamacpp", "metrics-during-c4-load.txt"), 10.0, 10.0)
    d = delta(a, b)
    assert not d.reset
    assert d.counters["steps"] == 2971 - 2829
    assert d.counters["generation_tokens"] == 5268 - 4748
    assert d.counters["preemptions"] is None


def test_vllm_during_load() -> None:
    s = parse_metrics(fixture_text("vllm", "metrics-during-c4-load.txt"), 0.0, 0.0)
    assert s.dialect == "vllm"
    assert s.steps == 349  # iteration_tokens_total_count: one observation per engine step
    assert s.generation_tokens == 1389 and s.prompt_tokens == 256
    assert s.running == 4 and s.waiting == 0
    assert s.kv_cache_usage == pytest.approx(0.011019283746556474)
    assert s.kv_capacity_tokens == 46592  # cache_config_info: 364 blocks x 128
    assert s.preemptions == 0 and s.prefix_cache_hit_tokens == 0
    assert s.prefix_cache_query_tokens == 256
    assert s.estimated_read_bytes == pytest.approx(9.8959123584e10)
    assert s.estimated_flops == pytest.approx(4.40028135936e11)
    assert s.spec_draft_tokens is None  # no speculative decoding configured: not published
    assert s.itl_s is not None and s.itl_s.count == 1381
    assert s.ttft_s is not None and s.ttft_s.count == 8
    assert s.e2e_s is not None and s.e2e_s.count == 4
    assert math.isinf(s.itl_s.buckets[-1][0])
    p50 = s.itl_s.quantile(0.5)
    assert p50 is not None and 0.025 < p50 <= 0.05  # 12 obs <= 25 ms, 1280 <= 50 ms


def test_vllm_per_step_bytes_since_start() -> None:
    """The c=4 capture is from a fresh server with --enable-mfu-metrics: ~285 MB per step."""
    s = parse_metrics(fixture_text("vllm", "metrics-during-c4-load.txt"), 0.0, 0.0)
    assert s.estimated_read_bytes is not None and s.steps
    assert 270e6 < s.estimated_read_bytes / s.steps < 300e6


def test_vllm_idle_to_after_without_mfu_metrics() -> None:
    """idle and after come from a server without --enable-mfu-metrics: the series sit at 0."""
    idle = parse_metrics(fixture_text("vllm", "metrics-idle.txt"), 0.0, 0.0)
    after = parse_metrics(fixture_text("vllm", "metrics-after-load.txt"), 2.0, 2.0)
    assert idle.running == 0 and after.running == 0
    d = delta(idle, after)
    assert not d.reset
    assert d.counters["steps"] == 2833 - 12
    assert d.counters["generation_tokens"] == 4748 - 12
    assert d.counters["estimated_read_bytes"] == 0
    itl = d.histograms["itl_s"]
    assert idle.itl_s is not None and after.itl_s is not None and itl is not None
    assert itl.count == after.itl_s.count - idle.itl_s.count


def test_vllm_restart_between_captures_is_a_reset() -> None:
    """The c=4 capture came from a restarted server (process_start_time_seconds differs)."""
    after = parse_metrics(fixture_text("vllm", "metrics-after-load.txt"), 0.0, 0.0)
    during = parse_metrics(fixture_text("vllm", "metrics-during-c4-load.txt"), 1.0, 1.0)
    d = delta(after, during)
    assert d.reset and d.counters["steps"] is None


def test_sglang_by_documented_names() -> None:
    s = parse_metrics(fixture_text("sglang", "metrics-by-name.txt"), 0.0, 0.0)
    assert s.dialect == "sglang"
    assert s.steps == 2250  # cuda_graph_passes_total over modes, tensor-parallel rank 0 only
    assert s.running == 4 and s.waiting == 1  # rank 1 repeats rank 0: not summed
    assert s.generation_tokens == 9000 and s.prompt_tokens == 1280
    assert s.prefix_cache_hit_tokens == 64 and s.preemptions == 2
    assert s.kv_cache_usage == 0.25 and s.kv_capacity_tokens == 161721
    assert s.spec_accepted_tokens is None and s.estimated_read_bytes is None
    assert s.itl_s is not None and s.itl_s.quantile(0.5) == pytest.approx(0.01 + 0.01 * 4480 / 8000)


def test_tgi_by_documented_names() -> None:
    s = parse_metrics(fixture_text("tgi", "metrics-by-name.txt"), 0.0, 0.0)
    assert s.dialect == "tgi"
    assert s.steps == 2600  # prefill + decode inference calls
    assert s.running == 4 and s.waiting == 2
    assert s.generation_tokens == 10240 and s.prompt_tokens == 1280
    assert s.spec_accepted_tokens == 0
    assert s.kv_cache_usage is None and s.preemptions is None and s.ttft_s is None
    assert s.e2e_s is not None and s.e2e_s.count == 40


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n",
        "<!doctype html><html><body>Not found</body></html>",
        '{"error": "no"}',
        "this is not prometheus {{{",
        "llamacpp:n_decode_total not-a-number\n",
    ],
)
def test_garbage_is_unparsable(text: str) -> None:
    with pytest.raises(MetricsUnparsable) as e:
        parse_metrics(text, 0.0, 0.0)
    assert e.value.warning_code == "metrics_unparsable"


def test_unknown_dialect() -> None:
    text = "# TYPE process_open_fds gauge\nprocess_open_fds 38\n"
    with pytest.raises(UnknownDialect, match="process_open_fds"):
        parse_metrics(text, 0.0, 0.0)


@pytest.mark.parametrize(
    ("dialect", "name"),
    [
        ("llamacpp", "metrics-during-c4-load.txt"),
        ("vllm", "metrics-during-c4-load.txt"),
        ("vllm", "metrics-idle.txt"),
        ("sglang", "metrics-by-name.txt"),
        ("tgi", "metrics-by-name.txt"),
    ],
)
def test_a_sample_without_histograms_keeps_every_other_field(dialect: str, name: str) -> None:
    """The bench's samples between a level's ends skip the latency histograms (most of the
    parsing); every counter and gauge must still read the same."""
    text = fixture_text(dialect, name)
    full = parse_metrics(text, 1.0, 2.0).to_json()
    lean = parse_metrics(text, 1.0, 2.0, histograms=False).to_json()
    hist = ("ttft_s", "itl_s", "e2e_s")
    assert all(lean[k] is None for k in hist)
    assert {k: v for k, v in lean.items() if k not in hist} == {
        k: v for k, v in full.items() if k not in hist
    }
    if dialect != "llamacpp":  # llama.cpp publishes no latency histograms at all
        assert any(full[k] is not None for k in hist)


def test_one_record_per_dialect_in_the_registry() -> None:
    from inferlab.servermetrics.dialects import DIALECTS, REGISTRY, SPECS
    from inferlab.vocab import DIALECT_NAMES

    assert DIALECTS == DIALECT_NAMES == tuple(d.name for d in SPECS)
    for name, spec in REGISTRY.items():
        assert spec.name == name and spec.needs and callable(spec.mapper)
        assert all(n.startswith(spec.prefix) for n in spec.needs + spec.histograms)
