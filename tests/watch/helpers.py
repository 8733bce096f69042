"""Snapshots of a server decoding at a known step time and batch, for watch's tests."""

from __future__ import annotations

from inferlab.physics.floor import Floor
from inferlab.servermetrics.snapshot import Histogram, Snapshot
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import STATED, with_overrides

WEIGHT_BYTES = 2e9  # bf16: 1e9 parameters
KV_PER_TOKEN = 1e5
BANDWIDTH = 100e9
FLOPS = 50e12


def physics(context: int | None = None) -> Floor:
    cost = ModelCost.stated(WEIGHT_BYTES, KV_PER_TOKEN)
    return Floor(cost, with_overrides(STATED, BANDWIDTH, FLOPS), context_tokens=context)


def itl_hist(n: float, step_s: float) -> Histogram:
    """n inter-token gaps, all inside the bucket (step_s/2, 2*step_s]."""
    return Histogram(((step_s / 2, 0.0), (2 * step_s, n), (float("inf"), n)), n, n * step_s)


def steady(
    t_s: float,
    step_s: float = 0.05,
    batch: int = 4,
    prompt_per_s: float = 10.0,
    kv_tokens: float | None = 2000.0,
    dialect: str = "vllm",
    t0_steps: float = 1000.0,
) -> Snapshot:
    """The engine at time t: one step every step_s, `batch` sequences, KV holding kv_tokens."""
    steps = t0_steps + t_s / step_s
    return Snapshot(
        dialect=dialect,
        t_mono_s=t_s,
        t_unix_s=1.8e9 + t_s,
        steps=steps,
        generation_tokens=batch * steps,
        prompt_tokens=prompt_per_s * t_s,
        running=float(batch),
        waiting=0.0,
        kv_cache_usage=None if kv_tokens is None else kv_tokens / 100_000,
        kv_capacity_tokens=None if kv_tokens is None else 100_000.0,
        itl_s=itl_hist(batch * steps, step_s),
    )


class FakeClock:
    """The watch loop's clock under the test's control: monotonic and wall time move only
    when the loop sleeps (or a scrape advances `t`, to play a slow one)."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def time(self) -> float:
        return 1.8e9 + self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds
