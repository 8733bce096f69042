"""The fake vLLM (testing/fake_vllm.py) schedules as vLLM does and counts as vLLM's
/metrics does, on vLLM 0.32's own page (slow: a subprocess)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from inferlab.profile.vllm_server import parse_counters
from inferlab.servermetrics.dialects import parse_metrics
from inferlab.testing.fake_steps import StepScript
from inferlab.testing.fake_vllm import VllmScript
from tests.profile.vllmfake import running_fake_vllm

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parent.parent / "servermetrics" / "fixtures" / "vllm" / "metrics-idle.txt"


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        return str(r.read().decode())


def _complete(base: str, prompt: str, max_tokens: int) -> None:
    body = json.dumps({"model": "fake-vllm", "prompt": prompt, "max_tokens": max_tokens})
    req = urllib.request.Request(
        f"{base}/completions", body.encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def _families(text: str) -> set[str]:
    return {s.split()[2] for s in text.splitlines() if s.startswith("# TYPE ")}


def test_a_prompt_over_the_budget_is_chunked_and_counted_as_vllm_counts() -> None:
    costs = StepScript(base_s=0.005, request_overhead_s=0.001)
    script = VllmScript(costs, block_size=16, num_gpu_blocks=100, max_num_batched_tokens=64)
    with running_fake_vllm(script) as url:
        root = url.removesuffix("/v1")
        before = parse_counters(_get(f"{root}/metrics"))
        words = " ".join(f"w{i}" for i in range(100))
        _complete(url, words, 2)  # 100 prompt tokens: a step of 64, then 36 and its token
        _complete(url, words, 1)  # the same prompt: 96 tokens (6 whole blocks) cached
        page = _get(f"{root}/metrics")
    d = parse_counters(page).minus(before)
    # steps that gave tokens: the second chunk's, one decode, the cached prompt's
    assert d.steps == 3
    assert d.step_tokens == (100 + 1) + 1 + (4 + 1)  # prompt tokens computed + sampled
    assert (d.prefix_queries, d.prefix_hits, d.prefilled) == (200, 96, 2)
    assert d.prefill_s >= 3 * costs.base_s  # two steps for the first, one for the second
    assert d.cache_info["block_size"] == "16" and d.cache_info["num_gpu_blocks"] == "100"
    snap = parse_metrics(page, 0.0, 0.0)  # inferlab's own reading of vLLM's dialect
    assert snap.dialect == "vllm" and snap.kv_capacity_tokens == 1600
    assert snap.prompt_tokens == 200 and snap.generation_tokens == 3
    # the captured page, every family of it: only the numbers are the fake's
    assert _families(page) == _families(FIXTURE.read_text())
