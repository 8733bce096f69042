"""A level's scrapes -> ServerLevelMetrics, and the named cross-checks, on built snapshots."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from inferlab.jsonio import dumps, loads_strict
from inferlab.metrics.level_summary import summarize_level
from inferlab.metrics.server_checks import attach_server, check_server, metrics_unavailable
from inferlab.physics.floor import Floor
from inferlab.servermetrics.level_counts import ServerLevelMetrics, summarize_server_level
from inferlab.servermetrics.sampler import Sample
from inferlab.servermetrics.snapshot import Snapshot
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import STATED, with_overrides
from inferlab.summary import FloorComparison, LevelSummary, RunWarning


def snap(t: float, steps: float, running: float, gen: float = 0.0, **kw: Any) -> Sample:
    s = Snapshot("vllm", t, 1e9 + t, steps=steps, running=running, generation_tokens=gen, **kw)
    return Sample("c=4", "sample", s, t_mono_s=t)


def ramp() -> list[Sample]:
    """Idle 1 s, 4 streams at 20 ms/step for 4 s (ramp samples at 2 and 3), drain, idle."""
    return [
        snap(0.0, 100, 0, 0),
        snap(1.0, 100, 2, 0),  # ramping: prefill steps, not the full batch
        snap(1.5, 110, 4, 40),
        snap(3.5, 210, 4, 440),
        snap(5.5, 310, 4, 840),
        snap(6.0, 312, 1, 848),
        snap(7.0, 312, 0, 848),
    ]


def test_step_time_over_the_full_batch_window() -> None:
    m = summarize_server_level(ramp(), 4)
    assert m is not None
    assert m.step_window_full_batch
    assert m.step_time_s == pytest.approx(4.0 / 200)  # 1.5 s -> 5.5 s, 200 steps
    assert m.steps_per_s == pytest.approx(50)
    assert m.decode_running_mean == 4
    assert m.steps == 212 and m.generation_tokens == 848
    assert m.tokens_per_step == pytest.approx(848 / 212)
    assert m.running_max == 4 and m.samples == 7
    assert m.sample_rate_hz == pytest.approx(6 / 7.0)
    assert m.waiting_max is None and m.kv_cache_usage_max is None  # not published: None
    # the whole level, idle edges included, would have said 33 ms a step
    assert 1.5 * m.step_time_s < 7.0 / 212  # type: ignore[operator]


def test_rate_level_uses_where_anything_ran() -> None:
    m = summarize_server_level(ramp(), None)
    assert m is not None and not m.step_window_full_batch
    assert m.step_time_s == pytest.approx(5.0 / 212)  # 1.0 s -> 6.0 s


def test_batch_never_reached_falls_back() -> None:
    m = summarize_server_level(ramp(), 8)
    assert m is not None and not m.step_window_full_batch and m.running_max == 4


def test_counter_reset_drops_counters() -> None:
    samples = [
        snap(0, 500, 4, 1000),
        snap(1, 550, 4, 1200),
        snap(2, 20, 4, 80),
        snap(3, 70, 4, 280),
    ]
    m = summarize_server_level(samples, 4)
    assert m is not None and m.counter_reset
    assert m.steps is None and m.step_time_s is None and m.generation_tokens is None
    assert m.running_max == 4  # gauges still stand


def test_mfu_series_stuck_at_zero_is_not_published() -> None:
    a = snap(0, 0, 4, estimated_read_bytes=0.0, estimated_flops=0.0)
    b = snap(2, 100, 4, estimated_read_bytes=0.0, estimated_flops=0.0)
    m = summarize_server_level([a, b], 4)
    assert m is not None and m.estimated_read_bytes_per_step is None
    c = snap(2, 100, 4, estimated_read_bytes=2.85e10, estimated_flops=1e11)
    m2 = summarize_server_level([a, c], 4)
    assert m2 is not None and m2.estimated_read_bytes_per_step == pytest.approx(2.85e8)
    assert m2.estimated_flops_per_step == pytest.approx(1e9)


def test_no_good_scrape_is_none() -> None:
    bad = Sample("c=1", "start", None, "no_server_metrics", "timeout", 0.0)
    assert summarize_server_level([bad], 1) is None


def test_json_round_trip() -> None:
    m = summarize_server_level(ramp(), 4)
    assert m is not None
    assert ServerLevelMetrics.from_json(m.to_json()) == m


def level(tpot: float = 0.02, mbu: float | None = None) -> LevelSummary:
    """A c=4 level with only its TPOT p50 set (and a client-basis comparison with `mbu`)."""
    s = summarize_level("c=4", "concurrency", 4, [])
    s = dataclasses.replace(s, tpot_s=dataclasses.replace(s.tpot_s, p50=tpot))
    if mbu is None:
        return s
    comp = FloorComparison(
        floor_batch=4,
        floor_context_tokens=160,
        bytes_per_step=1e9,
        flops_per_step=1e9,
        predicted_step_time_s=0.01,
        predicted_bound="memory",
        ceiling_tokens_per_s_per_user=100.0,
        predicted_tokens_per_s_total=400.0,
        measured_step_time_s=tpot,
        mbu=mbu,
    )
    return dataclasses.replace(s, comparison=comp)


def _codes(warns: list[RunWarning]) -> set[str]:
    return {w.code for w in warns}


def test_checks_quiet_when_all_agree() -> None:
    m = summarize_server_level(ramp(), 4)
    assert m is not None
    assert check_server(level(0.021), m, 4) == []  # 5 % apart: within 10 %


def test_each_check_fires() -> None:
    m = summarize_server_level(ramp(), 4)
    assert m is not None
    assert _codes(check_server(level(0.03), m, 4)) == {"client_server_disagree"}
    assert _codes(check_server(level(), m, 8)) == {"batch_not_reached"}
    more = [
        snap(0, 0, 4, preemptions=0.0, waiting=0.0),
        snap(2, 100, 4, preemptions=3.0, waiting=2.0),
    ]
    m2 = summarize_server_level(more, 4)
    assert m2 is not None
    assert _codes(check_server(level(), m2, 4)) == {"preempted", "queueing"}
    assert "queueing" not in _codes(check_server(level(), m2, None))  # open loop: expected


def test_prefix_cache_threshold() -> None:
    def with_hits(hits: float, queries: float) -> ServerLevelMetrics:
        a = snap(0, 0, 4, prefix_cache_hit_tokens=0.0, prefix_cache_query_tokens=0.0)
        b = snap(2, 100, 4, prefix_cache_hit_tokens=hits, prefix_cache_query_tokens=queries)
        m = summarize_server_level([a, b], 4)
        assert m is not None
        return m

    assert check_server(level(), with_hits(16, 1450), 4) == []  # 1 %: a shared BOS
    assert _codes(check_server(level(), with_hits(600, 1450), 4)) == {"prefix_cache_hit"}


def test_attach_prices_the_floor_at_the_server_step() -> None:
    cost = ModelCost.stated(weight_bytes=1e9, kv_bytes_per_token=0.0, params=1e9)
    hw = with_overrides(STATED, 100e9, 1e12, None)
    s, warns = attach_server(level(0.021, mbu=0.47), ramp(), 4, Floor(cost, hw), (32, 256))
    assert warns == []
    c = s.comparison
    assert c is not None and c.mbu_basis == "server_steps" and c.mbu_client_tpot == 0.47
    assert c.floor_batch == 4 and c.measured_step_time_s == pytest.approx(0.02)
    assert c.mbu == pytest.approx(1e9 / 0.02 / 100e9)
    assert s.server is not None and s.server.step_time_s == pytest.approx(0.02)
    back = LevelSummary.from_json(loads_strict(dumps(s)))  # strict JSON, and back
    assert back.server == s.server and back.comparison == s.comparison


def test_attach_without_server_steps_keeps_client_basis() -> None:
    cost = ModelCost.stated(weight_bytes=1e9, kv_bytes_per_token=0.0, params=1e9)
    hw = with_overrides(STATED, 100e9, 1e12, None)
    bad = [Sample("c=4", "start", None, "metrics_unparsable", "HTML", 0.0)]
    s, warns = attach_server(level(mbu=0.5), bad, 4, Floor(cost, hw), (32, 256))
    assert s.server is None and s.comparison is not None
    assert s.comparison.mbu_basis == "client_tpot" and s.comparison.mbu == 0.5
    assert [(w.code, w.severity) for w in warns] == [("metrics_unparsable", "warning")]


def test_unavailable_severity() -> None:
    assert metrics_unavailable("no_server_metrics", "404", False).severity == "info"
    assert metrics_unavailable("no_server_metrics", "404", True).severity == "warning"
    assert metrics_unavailable("metrics_unparsable", "HTML", False).severity == "warning"


def test_snapshot_survives_strict_json() -> None:
    """+Inf bucket bounds become null in strict JSON and come back as +Inf."""
    from inferlab import jsonio
    from inferlab.servermetrics.dialects import parse_metrics
    from tests.servermetrics.conftest import fixture_text

    s = parse_metrics(fixture_text("vllm", "metrics-during-c4-load.txt"), 1.0, 2.0)
    back = Snapshot.from_json(jsonio.loads_strict(jsonio.dumps(s)))
    assert back == s


def test_real_llama_server_samples_exclude_prefill() -> None:
    """server_metrics.jsonl of a real llama-server b11434 run on this machine (c=1 then c=4,
    32-token prompts, 64 forced tokens, 3 requests per level after one warm-up per stream).
    Its 32-token prefill took ~0.5 s, i.e. ten decode steps counted as one: the clean window
    leaves it out. The client's TPOT p50 in that run was 52.2 ms at c=1."""
    from pathlib import Path

    from inferlab.servermetrics.sampler import read_samples

    path = Path(__file__).parent / "fixtures" / "llamacpp" / "samples-c1-c4.jsonl"
    samples = [s for s in read_samples(path) if s.level == "c=1"]
    m = summarize_server_level(samples, 1)
    assert m is not None and m.step_window_full_batch and m.dialect == "llamacpp"
    assert m.steps == 256 and m.generation_tokens == 256 and m.tokens_per_step == 1
    assert m.step_time_s == pytest.approx(0.0522, rel=0.10)
    naive = (samples[-1].t_mono_s - samples[0].t_mono_s) / 256
    assert naive > 1.04 * m.step_time_s  # the whole level, prefills included, says more
    c4 = summarize_server_level([s for s in read_samples(path) if s.level == "c=4"], 4)
    assert c4 is not None and c4.running_max == 4 and c4.decode_running_mean == 4


def test_engine_bytes_are_per_gpu() -> None:
    """vLLM's estimate is per GPU: with --floor-tp 2 it doubles before the comparison."""
    from inferlab.metrics.server_checks import check_engine_bytes

    a = snap(0, 0, 4, estimated_read_bytes=0.0)
    b = snap(2, 100, 4, estimated_read_bytes=100 * 1.4e8)
    m = summarize_server_level([a, b], 4)
    assert m is not None
    s = level(mbu=0.5)
    assert s.comparison is not None
    s = dataclasses.replace(s, comparison=dataclasses.replace(s.comparison, bytes_per_step=2.8e8))
    assert _codes(check_engine_bytes(s, m, 1)[1]) == {"floor_disagrees_with_engine"}
    two, warns = check_engine_bytes(s, m, 2)
    assert warns == [] and two.comparison is not None
    assert two.comparison.engine_estimated_read_bytes_per_step == pytest.approx(2.8e8)


def test_disagreement_needs_more_than_one_stream() -> None:
    """A c=1 level is one sample of the two clocks: 50 % apart says nothing to act on."""
    one = summarize_server_level(ramp(), 1)
    assert one is not None and one.step_window_full_batch
    assert "client_server_disagree" not in _codes(check_server(level(0.03), one, 1))


def test_disagreement_within_the_clients_own_spread_is_noise() -> None:
    m = summarize_server_level(ramp(), 4)
    assert m is not None
    noisy = level(0.03)  # 50 % above the server's 20 ms step, but p90 is 2x p50
    noisy = dataclasses.replace(noisy, tpot_s=dataclasses.replace(noisy.tpot_s, p90=0.06))
    assert "client_server_disagree" not in _codes(check_server(noisy, m, 4))
    tight = dataclasses.replace(noisy, tpot_s=dataclasses.replace(noisy.tpot_s, p90=0.031))
    assert "client_server_disagree" in _codes(check_server(tight, m, 4))
