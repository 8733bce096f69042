"""The real llama-server's own /metrics beside the client: c=1,2,4."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, run_benchmark
from inferlab.engines.llama_server import LlamaServer
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.physics.floor import Floor
from inferlab.servermetrics.sampler import read_samples
from inferlab.specs.cost import derive_cost
from inferlab.specs.hardware import STATED, with_overrides
from inferlab.specs.resolve import resolve_model
from tests.integration.conftest import SLOTS

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_server_counters_beside_the_client(llama: LlamaServer, tmp_path: Path) -> None:
    """What holds whatever the machine's load: the engine's counters reach each level, never
    more streams running than the level sends or the server has slots, and no engine step
    emits more than one token per slot. (How close the server's step time is to the
    client's TPOT depends on the load: both are printed by the summary, not bounded here.)"""
    # The floor's numbers only pick the MBU basis here; its bandwidth is not under test.
    floor = Floor(derive_cost(resolve_model(str(llama.gguf))), with_overrides(STATED, 20e9, 1e11))
    cfg = BenchConfig(
        url=llama.base_url,
        model=None,
        load=Workload.fixed(
            prompt_tokens=8,
            output_tokens=32,
            levels=[Level("concurrency", c) for c in (1, 2, 4)],
            requests_per_level=4,
        ),
        out_dir=tmp_path,
        floor=floor,
    )
    s = asyncio.run(run_benchmark(cfg)).summary
    codes = {w.code for w in s.warnings}
    assert not codes & {"no_server_metrics", "metrics_unparsable", "counter_reset"}, s.warnings
    for lv in s.levels:
        srv = lv.server
        assert srv is not None and srv.dialect == "llamacpp", lv.label
        assert srv.steps and srv.steps > 0
        assert srv.running_max is not None and srv.running_max <= min(lv.concurrency, SLOTS)
        assert srv.generation_tokens is not None
        assert srv.steps >= srv.generation_tokens / SLOTS, lv.label
        if srv.step_time_s is not None:
            assert lv.comparison is not None and lv.comparison.mbu_basis == "server_steps"
            assert lv.comparison.measured_step_time_s == srv.step_time_s
    samples = read_samples(tmp_path / "server_metrics.jsonl")
    assert {x.level for x in samples} == {"c=1", "c=2", "c=4"}
