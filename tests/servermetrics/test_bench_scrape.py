"""Bench against the fake server publishing /metrics: the server's step time and batch come back.

The fake's step clock ticks every TPOT while anything is in flight and its
running gauge is the number of in-flight streams, so the truth is its script:
step time = TPOT (within 2 %), running batch = the concurrency (exactly).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inferlab.bench.benchmark import (
    BenchConfig,
    BenchResult,
    Floor,
    event_loop_runner,
    run_benchmark,
)
from inferlab.jsonio import loads_strict
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.servermetrics.sampler import read_samples
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import STATED, with_overrides
from inferlab.summary import LevelSummary, ServerLevelMetrics
from inferlab.testing.fake_server import running_fake_server

pytestmark = pytest.mark.slow  # the scripted fake server, in its own process

TPOT = 0.01
N, OUT = 4, 40  # requests per level, tokens per request


def bench(
    url: str, out: Path, levels: tuple[int, ...], n: int = N, output_tokens: int = OUT, **kw: object
) -> BenchResult:
    cfg = BenchConfig(
        url=url,
        model="fake",
        load=Workload.fixed(
            prompt_tokens=16,
            output_tokens=output_tokens,
            levels=[Level("concurrency", c) for c in levels],
            requests_per_level=n,
        ),
        out_dir=out,
        **kw,  # type: ignore[arg-type]
    )
    result: BenchResult = event_loop_runner()(run_benchmark(cfg))
    return result


def codes(res: BenchResult) -> set[str]:
    return {w.code for w in res.summary.warnings}


def check_level(lv: LevelSummary, c: int, dialect: str) -> ServerLevelMetrics:
    """What the scrape guarantees, whatever the machine's speed: the engine's own counters
    reach the summary exactly. How close its step time is to the script's TPOT depends on
    the load (the fake's step clock counts wall time with a request in flight); the
    arithmetic of the step window is tested on recorded scrapes in test_level.py."""
    srv = lv.server
    assert srv is not None, lv
    assert srv.dialect == dialect
    assert srv.steps and srv.steps > 0 and srv.samples >= 2
    assert srv.waiting_max == 0 and srv.counter_reset is False
    # never more streams in flight than the level's concurrency
    assert srv.running_max is not None and srv.running_max <= c
    assert srv.decode_running_mean is None or srv.decode_running_mean <= c
    if srv.step_time_s is not None:
        assert srv.step_time_s > 0 and srv.steps_per_s == pytest.approx(1 / srv.step_time_s)
    # every generated token is counted: warm-up (one per slot) and measured, OUT each
    assert srv.generation_tokens == (N + c) * OUT
    assert srv.tokens_per_step == pytest.approx(srv.generation_tokens / srv.steps)
    return srv


@pytest.fixture(scope="module")
def vllm_url() -> Iterator[str]:
    with running_fake_server(ttft=0.01, tpot=TPOT, slow_every=0, metrics="vllm") as url:
        yield url


@pytest.fixture(scope="module")
def bare_url() -> Iterator[str]:
    """A fast fake with no /metrics (404)."""
    with running_fake_server(ttft=0.01, tpot=0.002, slow_every=0) as url:
        yield url


def test_llamacpp_dialect(tmp_path: Path) -> None:
    with running_fake_server(ttft=0.01, tpot=TPOT, slow_every=0, metrics="llamacpp") as url:
        res = bench(url, tmp_path, (1, 4))
    for lv, c in zip(res.summary.levels, (1, 4), strict=True):
        srv = check_level(lv, c, "llamacpp")
        assert srv.kv_cache_usage_max is None  # llama.cpp does not publish it
    assert not codes(res) & {"no_server_metrics", "metrics_unparsable", "batch_not_reached"}
    samples = read_samples(tmp_path / "server_metrics.jsonl")
    assert {s.level for s in samples} == {"c=1", "c=4"}
    assert [s.mark for s in samples if s.level == "c=4"][0] == "start"
    assert all(s.snapshot is not None for s in samples)
    loads_strict((tmp_path / "summary.json").read_text())


def test_vllm_dialect_prices_the_floor_at_the_server_batch(tmp_path: Path, vllm_url: str) -> None:
    # The fake vLLM reports 285 MB read per step; a floor of 285 MB of weights agrees with it.
    cost = ModelCost.stated(weight_bytes=285e6, kv_bytes_per_token=0.0, params=135e6)
    hw = with_overrides(STATED, 100e9, 1e12, None)
    res = bench(vllm_url, tmp_path / "agree", (4,), floor=Floor(cost, hw))
    small = ModelCost.stated(weight_bytes=100e6, kv_bytes_per_token=0.0, params=135e6)
    off = bench(vllm_url, tmp_path / "off", (4,), floor=Floor(small, hw))
    lv = res.summary.levels[0]
    srv = check_level(lv, 4, "vllm")
    c = lv.comparison
    assert c is not None and c.mbu_basis == "server_steps" and c.floor_batch == 4
    assert c.measured_step_time_s == srv.step_time_s
    assert srv.step_time_s is not None
    assert c.mbu == pytest.approx(285e6 / srv.step_time_s / 100e9)
    # the fake engine's read-bytes counter is 285 MB x its steps, read together
    assert srv.estimated_read_bytes_per_step == pytest.approx(285e6, rel=1e-9)
    assert c.engine_estimated_read_bytes_per_step == srv.estimated_read_bytes_per_step
    assert srv.kv_cache_usage_max is not None and 0 < srv.kv_cache_usage_max < 1
    assert srv.itl_p50_s is not None
    assert "floor_disagrees_with_engine" not in codes(res)
    assert "floor_disagrees_with_engine" in codes(off)


def test_no_metrics_and_no_scrape(tmp_path: Path, bare_url: str) -> None:
    res = bench(bare_url, tmp_path / "404", (1,), n=2)
    quiet = bench(bare_url, tmp_path / "off", (1,), n=2, scrape=False)
    w = [w for w in res.summary.warnings if w.code == "no_server_metrics"]
    assert len(w) == 1 and w[0].severity == "info" and "404" in w[0].message
    assert res.summary.levels[0].server is None
    assert res.summary.levels[0].requests_ok == 2  # client-only numbers remain
    assert quiet.summary.levels[0].server is None
    assert "no_server_metrics" not in codes(quiet)
    assert not (tmp_path / "off" / "server_metrics.jsonl").exists()


def test_report_shows_the_server_beside_the_client(tmp_path: Path, vllm_url: str) -> None:
    from inferlab.report.console import sweep_rows
    from inferlab.report.inputs import render_run

    res = bench(vllm_url, tmp_path, (1, 2), n=3, output_tokens=50)
    head, rows = sweep_rows(res.summary)
    assert head[-4:] == ["srv steps/s", "srv tok/step", "srv running", "srv KV max"]
    srv = res.summary.levels[1].server
    assert srv is not None and srv.steps_per_s is not None
    assert rows[1][-4] == f"{srv.steps_per_s:.1f}"  # as the summary has it
    assert rows[1][-2] == f"{srv.running_mean:.1f}/{srv.running_max:g}"  # running mean/max
    html = render_run(tmp_path, res.summary).read_text()
    assert (tmp_path / "server.png").stat().st_size > 1000
    assert "The server&#x27;s own view" in html or "The server's own view" in html
    assert "srv steps/s" in html


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/html/metrics", "metrics_unparsable"),
        ("/junk/metrics", "metrics_unparsable"),
        ("/off/metrics", "no_server_metrics"),
        ("/slow/metrics", "no_server_metrics"),
    ],
)
def test_bad_metrics_never_fail_the_bench(
    tmp_path: Path, metrics_server: Any, bare_url: str, path: str, code: str
) -> None:
    from tests.servermetrics.test_scrape import ROUTES, app_with

    root = metrics_server(app_with(ROUTES))
    res = bench(bare_url, tmp_path, (1,), n=2, metrics_url=root + path)
    w = [w for w in res.summary.warnings if w.code == code]
    assert len(w) == 1 and w[0].severity == "warning"  # --metrics-url was given
    lv = res.summary.levels[0]
    assert lv.requests_ok == 2 and lv.server is None
