"""benchmarks/vllm_preemption.py's own arithmetic: the server's KV blocks and preemption
counter read from vLLM's /metrics, the verdict, and each level's first burst read from the
records."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from inferlab.records import RecordWriter, RequestRecord
from tests.benchmods import benchmark_module

MS = 1_000_000
# as the KV-starved vLLM 0.32 CPU server states them (labels abridged)
PAGE = """\
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="smollm2"} 37.0
vllm:num_preemptions_created{engine="0",model_name="smollm2"} 1.7964990226957755e+09
vllm:cache_config_info{block_size="128",cache_dtype="auto",enable_prefix_caching="True",\
engine="0",kv_cache_size_tokens="2048",num_cpu_blocks="None",num_gpu_blocks="16"} 1.0
"""


@pytest.fixture
def vp(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """benchmarks/vllm_preemption.py as a module."""
    return benchmark_module("vllm_preemption", monkeypatch)


def test_the_kv_blocks_and_the_preemption_counter_are_read_from_metrics(vp: ModuleType) -> None:
    assert vp.cache_info(PAGE) == vp.CacheInfo(128, 16, True)
    assert vp.preemptions_total(PAGE) == 37.0  # the _created gauge is not counted
    with pytest.raises(SystemExit, match="no vllm:cache_config_info"):
        vp.cache_info("llamacpp:tokens_predicted_total 3\n")


def test_the_verdict_asks_the_same_levels_to_preempt_within_the_tolerance(
    vp: ModuleType,
) -> None:
    assert vp.verdict(0.0, 0, 0.25) and not vp.verdict(0.0, 1, 0.25)
    assert not vp.verdict(3.0, 0, 0.25)
    assert vp.verdict(16.0, 13, 0.25) and vp.verdict(16.0, 20, 0.25)  # -19 %, +25 %
    assert not vp.verdict(16.0, 11, 0.25) and not vp.verdict(16.0, 21, 0.25)


def test_each_levels_first_burst_is_read_from_its_first_tokens(
    tmp_path: Path, vp: ModuleType
) -> None:
    # (level, sent ms, first token ms): c=4 sent within 1 ms, the first request alone in
    # the server's first step (96 ms), the three others together in the next (358 ms);
    # c=2 both in a slow first step; a follow-up sent later is no part of the burst
    rows = [
        ("c=4", 0.0, 96.0),
        ("c=4", 0.2, 358.2),
        ("c=4", 0.3, 358.3),
        ("c=4", 0.4, 358.3),
        ("c=4", 12_000.0, 12_100.0),
        ("c=2", 20_000.0, 21_903.7),
        ("c=2", 20_000.3, 21_904.0),
    ]
    w = RecordWriter(tmp_path / "records.jsonl")
    for i, (level, sent, first) in enumerate(rows):
        w.write(
            RequestRecord(
                i, level, "measure", 64, 400, send_ns=int(sent * MS), event_ns=[int(first * MS)]
            )
        )
    w.close()
    assert vp.first_steps(tmp_path) == {"c=4": (1, 4), "c=2": (2, 2)}
