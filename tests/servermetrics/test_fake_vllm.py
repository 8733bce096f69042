"""The scripted fake vLLM (testing/fake_metrics.py) against the captured vLLM 0.32 page, and
bench reading its preemptions and prefix-cache counters per level.

The fake publishes only families the real page has, with the real labels, so what bench
reads from it is what it would read from vLLM; `vllm-kv` scripts a KV-starved server: each
request preempted KV_PREEMPTIONS times and half its prompt found in the prefix cache. Bench's
count per level must be exactly the fake's script."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.report.console import sweep_rows
from inferlab.servermetrics.dialects import VLLM, parse_metrics
from inferlab.testing.fake_metrics import KV_PREEMPTIONS, FakeEngine, engine_for, render
from inferlab.testing.fake_server import running_fake_server
from tests.servermetrics.conftest import fixture_text
from tests.servermetrics.test_bench_scrape import OUT, N, bench


def families(text: str) -> dict[str, tuple[str, frozenset[str]]]:
    """Each family: its type and the label names of its samples (le and _created aside)."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(text):
        labels = {k for s in fam.samples if not s.name.endswith("_created") for k in s.labels}
        out[fam.name] = (fam.type, frozenset(labels - {"le"}))
    return out


def started(engine: FakeEngine, prompts: list[int]) -> FakeEngine:
    for i, p in enumerate(prompts):
        engine.start(i, p, list, 0)
    return engine


def test_the_fake_speaks_the_captured_vllm_page() -> None:
    real = families(fixture_text("vllm", "metrics-idle.txt"))
    fake = families(render(started(engine_for("vllm-kv", 0.01), [16])).decode())
    read = [name for name in fake if name.startswith(VLLM.needs)]
    assert "vllm:num_preemptions" in read and "vllm:prefix_cache_hits" in read
    for name in fake:
        assert name in real, name
        kind, labels = fake[name]
        assert kind == real[name][0] and labels <= real[name][1], name


def test_a_kv_starved_fake_counts_what_its_script_says() -> None:
    e = started(engine_for("vllm-kv", 0.01), [16, 33, 8])
    s = parse_metrics(render(e).decode(), 0.0, 0.0)
    assert s.preemptions == 3 * KV_PREEMPTIONS
    assert (s.prefix_cache_hit_tokens, s.prefix_cache_query_tokens) == (8 + 16 + 4, 57)
    plain = parse_metrics(render(started(engine_for("vllm", 0.01), [16])).decode(), 0.0, 0.0)
    assert plain.preemptions == 0 and plain.prefix_cache_hit_tokens == 0


@pytest.fixture(scope="module")
def kv_url() -> Iterator[str]:
    with running_fake_server(ttft=0.01, tpot=0.005, slow_every=0, metrics="vllm-kv") as url:
        yield url


@pytest.mark.slow  # the scripted fake server, in its own process
def test_bench_counts_each_levels_preemptions_as_the_server_did(
    tmp_path: Path, kv_url: str
) -> None:
    res = bench(kv_url, tmp_path, (1, 4))
    cells = []
    for lv, c in zip(res.summary.levels, (1, 4), strict=True):
        srv = lv.server
        assert srv is not None and srv.counter_reset is False
        sent = N + c  # the level's requests, its warm-up ones (one a stream) included
        assert srv.preemptions == sent * KV_PREEMPTIONS
        queries = srv.prefix_cache_query_tokens
        assert queries is not None and queries % sent == 0  # one prompt length, every request
        assert srv.prefix_cache_hit_tokens == sent * (queries // sent // 2)
        assert srv.generation_tokens == sent * OUT
        cells.append(f"{sent * KV_PREEMPTIONS}")
    head, rows = sweep_rows(res.summary)
    assert head[-1] == "srv preempt" and [r[-1] for r in rows] == cells
