"""The real llama-server's own /metrics beside the client: c=1,2,4, step time vs TPOT."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, Floor, run_benchmark
from inferlab.bench.runner import Level
from inferlab.engines.llama_server import LlamaServer, ServerOptions
from inferlab.servermetrics.sampler import read_samples
from inferlab.specs.cost import derive_cost
from inferlab.specs.hardware import STATED, with_overrides
from inferlab.specs.resolve import resolve_model

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def llama4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """Four slots, so c=4 runs as one batch; started with --metrics (see engines/)."""
    log = Path(tmp_path_factory.mktemp("llama4")) / "llama-server.log"
    with LlamaServer(ServerOptions(parallel=4, ctx_per_slot=256, log_path=log)) as srv:
        assert "--metrics" in srv.command()
        yield srv


def test_server_steps_match_client_tpot(llama4: LlamaServer, tmp_path: Path) -> None:
    # The floor's numbers only pick the MBU basis here; its bandwidth is not under test.
    floor = Floor(derive_cost(resolve_model(str(llama4.gguf))), with_overrides(STATED, 20e9, 1e11))
    cfg = BenchConfig(
        url=llama4.base_url,
        model=None,
        levels=[Level("concurrency", c) for c in (1, 2, 4)],
        requests_per_level=4,
        # Short prompts: on this CPU a 32-token prefill costs ~10 decode steps, and the
        # client's TPOT carries the other streams' prefills that the server's decode window
        # (rightly) leaves out; at 8 tokens that share is small.
        prompt_tokens=8,
        output_tokens=96,
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
        assert srv.running_max == lv.concurrency
        tpot = lv.tpot_s.p50
        assert srv.step_time_s == pytest.approx(tpot, rel=0.15), lv.label
        assert lv.comparison is not None and lv.comparison.mbu_basis == "server_steps"
        assert lv.comparison.measured_step_time_s == srv.step_time_s
    samples = read_samples(tmp_path / "server_metrics.jsonl")
    assert {x.level for x in samples} == {"c=1", "c=2", "c=4"}
