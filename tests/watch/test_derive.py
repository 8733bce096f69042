"""Watch's live quantities against hand computation (a server at a known step time and batch)."""

from __future__ import annotations

import pytest

from inferlab.servermetrics.snapshot import Histogram, Snapshot
from inferlab.watch.derive import derive
from inferlab.watch.window import SnapshotWindow
from tests.watch.helpers import BANDWIDTH, FLOPS, KV_PER_TOKEN, WEIGHT_BYTES, physics, steady


def window(snaps: list[Snapshot], window_s: float = 10.0) -> tuple[Snapshot, ...]:
    w = SnapshotWindow(window_s)
    for s in snaps:
        w.add(s)
    return w.snapshots


def test_mbu_mfu_floor_match_hand_computation() -> None:
    step_s, batch, kv_tokens = 0.05, 4, 2000.0
    live = derive(window([steady(t, step_s, batch) for t in range(0, 21)]), physics())
    # by hand: 20 steps/s; KV use x capacity = 2000 tokens over 4 sequences = 500 each
    bytes_step = WEIGHT_BYTES + batch * (kv_tokens / batch) * KV_PER_TOKEN  # 2.2 GB
    assert live.steps_per_s.value == pytest.approx(1 / step_s, rel=1e-9)
    assert live.window_s == pytest.approx(10.0)  # differenced over the window, not since start
    assert live.context_tokens.value == pytest.approx(500.0)
    assert live.bytes_per_step.value == pytest.approx(bytes_step, rel=0.01)
    assert live.mbu.value == pytest.approx(bytes_step / step_s / BANDWIDTH, rel=0.01)  # 0.44
    # MFU: 2 x 1e9 params x (80 generated + 10 prompt tok/s) / 50 TFLOPS
    assert live.mfu.value == pytest.approx(2 * 1e9 * (batch / step_s + 10.0) / FLOPS, rel=0.01)
    assert live.floor_step_s.value == pytest.approx(bytes_step / BANDWIDTH, rel=0.01)
    assert live.above_floor.value == pytest.approx(step_s / (bytes_step / BANDWIDTH), rel=0.01)
    assert live.tokens_per_step.value == pytest.approx(batch)
    assert live.running.value == batch
    assert live.floor_bound == "memory"


def test_latency_percentiles_come_from_the_window_not_since_start() -> None:
    fast = [steady(t, 0.05) for t in range(0, 11)]
    # then the server slows to 0.2 s per step; its cumulative histogram still holds the fast past
    base = fast[-1]
    slow = []
    for t in range(11, 31):
        n_slow = (t - 10) / 0.2 * 4
        h0 = base.itl_s
        assert h0 is not None
        buckets = ((0.025, 0.0), (0.1, h0.count), (0.4, h0.count + n_slow), (float("inf"), 0.0))
        buckets = (*buckets[:3], (float("inf"), h0.count + n_slow))
        slow.append(
            Snapshot(
                "vllm", float(t), 1.8e9 + t, steps=(base.steps or 0) + (t - 10) / 0.2,
                running=4.0, itl_s=Histogram(buckets, h0.count + n_slow, 0.0),
            )
        )  # fmt: skip
    live = derive(window(fast + slow), physics())
    assert live.steps_per_s.value == pytest.approx(5.0)
    # every gap in the last 10 s is in (0.1, 0.4]: the p50 interpolates inside that bucket
    assert live.itl_p50_s.value is not None and 0.1 < live.itl_p50_s.value <= 0.4


def test_without_a_steps_counter_mbu_is_unknown_with_the_reason_never_zero() -> None:
    snaps = [
        Snapshot("tgi", float(t), 1.8e9 + t, generation_tokens=40.0 * t, running=2.0)
        for t in range(5)
    ]
    live = derive(window(snaps), physics())
    assert live.steps_per_s.value is None
    assert "tgi dialect publishes no engine steps" in live.steps_per_s.basis
    assert live.mbu.value is None and live.mbu.basis.startswith("unknown: ")
    assert "engine steps" in live.mbu.basis
    assert live.mfu.value is not None  # tokens/s are published: MFU is still known


def test_one_scrape_gives_no_rates() -> None:
    live = derive(window([steady(0.0)]), physics())
    assert live.steps_per_s.value is None and "one scrape" in live.steps_per_s.basis
    assert live.mbu.value is None


def test_no_kv_published_uses_stated_context_or_says_lower_bound() -> None:
    snaps = [steady(t, kv_tokens=None, dialect="llamacpp") for t in range(11)]
    stated = derive(window(snaps), physics(context=500))
    assert stated.context_tokens.basis == "stated --context"
    assert stated.bytes_per_step.value == pytest.approx(WEIGHT_BYTES + 4 * 500 * KV_PER_TOKEN)
    bare = derive(window(snaps), physics())
    assert bare.context_tokens.value is None and "--context" in bare.context_tokens.basis
    assert bare.bytes_per_step.value == pytest.approx(WEIGHT_BYTES)
    assert bare.mbu.value == pytest.approx(WEIGHT_BYTES * 20 / BANDWIDTH)
    assert "lower bound" in bare.mbu.basis


def test_idle_server_has_zero_mbu_and_no_step_time() -> None:
    snaps = [steady(0.0, batch=0)] * 1 + [
        Snapshot("vllm", float(t), 1.8e9 + t, steps=1000.0, generation_tokens=0.0,
                 prompt_tokens=0.0, running=0.0, waiting=0.0)
        for t in range(1, 5)
    ]  # fmt: skip
    live = derive(window(snaps[1:]), physics())
    assert live.steps_per_s.value == 0.0
    assert live.mbu.value == 0.0 and "idle" in live.mbu.basis
    assert live.measured_step_s.value is None and "idle" in live.measured_step_s.basis


def test_counter_reset_starts_the_window_afresh() -> None:
    w = SnapshotWindow(10.0)
    for t in range(5):
        assert not w.add(steady(float(t)))
    assert w.add(steady(5.0, t0_steps=0.0))  # restarted: steps fell
    assert len(w) == 1
    w.add(steady(6.0, t0_steps=0.0))
    live = derive(w.snapshots, physics())
    assert live.steps_per_s.value == pytest.approx(20.0)  # never negative, never spanning it


def test_engine_estimate_beside_inferlabs() -> None:
    snaps = []
    for t in range(11):
        s = steady(float(t))
        snaps.append(
            Snapshot(**{**s.to_json(), "itl_s": s.itl_s, "estimated_read_bytes": 2.2e9 * s.steps})
        )
    live = derive(window(snaps), physics())
    assert live.engine_bytes_per_step.value == pytest.approx(2.2e9)
    assert live.engine_mbu.value == pytest.approx(2.2e9 * 20 / BANDWIDTH)
    assert live.bytes_per_step.value == pytest.approx(2.2e9, rel=0.01)


def test_llamacpp_generated_rate_from_steps_and_running() -> None:
    # llama.cpp adds a request's tokens at its end: the counter is flat mid-request
    snaps = [
        Snapshot("llamacpp", float(t), 1.8e9 + t, steps=20.0 * t, generation_tokens=0.0,
                 prompt_tokens=0.0, running=2.0)
        for t in range(11)
    ]  # fmt: skip
    live = derive(window(snaps), physics(context=100))
    assert live.generated_tokens_per_s.value == pytest.approx(40.0)
    assert "llama.cpp" in live.generated_tokens_per_s.basis
    assert live.mfu.value == pytest.approx(40.0 * 2 * 1e9 / FLOPS, rel=0.01)


def test_engine_estimate_is_per_gpu_so_tp_multiplies_it() -> None:
    from dataclasses import replace

    snaps = []
    for t in range(11):
        s = steady(float(t))
        snaps.append(
            Snapshot(**{**s.to_json(), "itl_s": s.itl_s, "estimated_read_bytes": 1.1e9 * s.steps})
        )
    live = derive(window(snaps), replace(physics(), devices=2))
    assert live.engine_bytes_per_step.value == pytest.approx(2.2e9)
