"""The demo's trace level: which slice, scaled how, added after the sweep."""

from __future__ import annotations

from inferlab.bench.benchmark import BenchConfig
from inferlab.demo.config import TraceChoice
from inferlab.demo.trace import demo_trace, trace_context_tokens, with_trace_level
from inferlab.load.spec import Level
from inferlab.load.workload import Workload

CHOICE = TraceChoice(False, None, None, 1.0, None, 512)  # the demo's defaults


def test_the_demo_replays_a_scaled_slice_of_azure_conv() -> None:
    tr = demo_trace(CHOICE, quick=True)
    assert tr is not None and tr.name == "azure-conv"
    assert tr.trace.length_scale == 0.05 and tr.trace.window_s == (0.0, 10.0)
    assert tr.trace.output_scale == 0.1  # replies of ~9 tokens: a TPOT worth grading
    assert sorted(tr.trace.output_tokens.tolist())[len(tr.trace.output_tokens) // 2] >= 5
    assert tr.trace.rows == 13  # the first 10 s of azure-conv
    assert trace_context_tokens(tr) < 512  # fits a small CPU slot
    full = demo_trace(CHOICE, quick=False)
    assert full is not None and full.trace.rows > tr.trace.rows
    assert demo_trace(TraceChoice(True, None, None, 1.0, None, 512), quick=True) is None
    # a scale given for the demo's trace scales both, unless outputs get their own
    both = demo_trace(TraceChoice(False, None, None, 1.0, 0.2, 512), quick=True)
    assert both is not None and both.trace.output_scale == 0.2
    apart = demo_trace(TraceChoice(False, None, None, 1.0, 0.2, 512, 1.0), quick=True)
    assert apart is not None and (apart.trace.length_scale, apart.trace.output_scale) == (0.2, 1)


def test_the_trace_level_comes_after_the_sweep() -> None:
    levels = [Level("concurrency", 1), Level("concurrency", 2)]
    cfg = BenchConfig("http://x/v1", None, Workload.fixed(levels=levels))
    tr = demo_trace(CHOICE, quick=True)
    with_trace_level(cfg, tr)
    assert [lv.kind for lv in cfg.levels] == ["concurrency", "concurrency", "trace"]
    assert cfg.load is not None and cfg.load.trace is tr
    reqs = cfg.load.requests(cfg.levels[-1])
    assert tr is not None and len(reqs) == tr.trace.rows
    assert len(cfg.load.requests(cfg.levels[0])) == cfg.requests_per_level  # the sweep unchanged
