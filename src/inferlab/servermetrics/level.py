"""A level's scrapes -> what the server itself counted during it (`ServerLevelMetrics`).

Counters come from the level's first and last good snapshot (their difference).
The step time is wall time / engine steps over the *decode window*: from the
first to the last sample at which the server ran the level's whole batch
(running >= the concurrency), so the ramp-up, the drain and any idle time at
the edges do not dilute it. Without such samples (rate levels, a batch the
server never reached) the window is where anything ran, and says so.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, fields
from typing import Any

from inferlab.servermetrics.sampler import Sample
from inferlab.servermetrics.snapshot import Histogram, Snapshot, delta


@dataclass(frozen=True, slots=True)
class ServerLevelMetrics:
    """The server's own books for one level. None: the engine does not publish it."""

    dialect: str
    samples: int  # good snapshots in the level, start and end included
    failed_scrapes: int
    sample_rate_hz: float | None
    counter_reset: bool  # a counter went down: the server restarted mid-level
    steps: float | None
    step_time_s: float | None  # over the decode window
    steps_per_s: float | None
    step_window_s: float | None
    step_window_full_batch: bool  # the window is where the whole batch ran
    decode_running_mean: float | None  # mean running requests inside the window
    tokens_per_step: float | None  # generated tokens / steps over the level
    running_mean: float | None
    running_max: float | None
    waiting_max: float | None
    kv_cache_usage_max: float | None
    kv_capacity_tokens: float | None
    generation_tokens: float | None
    prompt_tokens: float | None
    preemptions: float | None
    prefix_cache_hit_tokens: float | None
    prefix_cache_query_tokens: float | None
    spec_accepted_tokens: float | None
    spec_draft_tokens: float | None
    ttft_p50_s: float | None
    ttft_p99_s: float | None
    itl_p50_s: float | None
    itl_p99_s: float | None
    e2e_p50_s: float | None
    e2e_p99_s: float | None
    estimated_read_bytes_per_step: float | None  # vLLM --enable-mfu-metrics
    estimated_flops_per_step: float | None

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ServerLevelMetrics:
        kw: dict[str, Any] = {f.name: d.get(f.name) for f in fields(cls)}
        return cls(**kw)


def _per(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


def _gauge(snaps: list[Snapshot], name: str) -> list[float]:
    return [v for s in snaps if (v := getattr(s, name)) is not None]


def decode_window(
    snaps: list[Snapshot], target_running: float | None
) -> tuple[list[Snapshot], bool]:
    """Snapshots from the first to the last at full batch; else where anything ran."""

    def span(ok: list[bool]) -> list[Snapshot]:
        idx = [i for i, good in enumerate(ok) if good]
        return snaps[idx[0] : idx[-1] + 1] if len(idx) >= 2 else []

    if target_running:
        full = span([(s.running or 0) >= target_running for s in snaps])
        if full:
            return full, True
    return span([(s.running or 0) > 0 for s in snaps]), False


def _step_time(win: list[Snapshot]) -> tuple[float | None, float | None, float | None]:
    """(step_time_s, window_s, running mean) of a window; None where steps did not move."""
    if len(win) < 2:
        return None, None, None
    d = delta(win[0], win[-1])
    steps = d.counters["steps"]
    running = _gauge(win, "running")
    mean = statistics.fmean(running) if running else None
    if d.reset or not steps or d.dt_s <= 0:
        return None, d.dt_s, mean
    return d.dt_s / steps, d.dt_s, mean


def _quantiles(h: Histogram | None) -> tuple[float | None, float | None]:
    return (h.quantile(0.5), h.quantile(0.99)) if h is not None and h.count > 0 else (None, None)


def _resets(snaps: list[Snapshot]) -> bool:
    return any(delta(a, b).reset for a, b in zip(snaps, snaps[1:], strict=False))


def summarize_server_level(
    samples: list[Sample], target_running: float | None
) -> ServerLevelMetrics | None:
    """None when no scrape of the level succeeded."""
    snaps = sorted((s.snapshot for s in samples if s.snapshot), key=lambda s: s.t_mono_s)
    if not snaps:
        return None
    first, last = snaps[0], snaps[-1]
    reset = _resets(snaps)
    d = delta(first, last)
    c = {k: (None if reset else v) for k, v in d.counters.items()}
    win, full = decode_window(snaps, target_running)
    step_s, win_s, win_running = (None, None, None) if reset else _step_time(win)
    read, flops = c["estimated_read_bytes"], c["estimated_flops"]
    running = _gauge(snaps, "running")
    kv = _gauge(snaps, "kv_cache_usage")
    waiting = _gauge(snaps, "waiting")
    ttft, itl, e2e = (_quantiles(d.histograms[k]) for k in ("ttft_s", "itl_s", "e2e_s"))
    return ServerLevelMetrics(
        dialect=last.dialect,
        samples=len(snaps),
        failed_scrapes=sum(1 for s in samples if s.snapshot is None),
        sample_rate_hz=_per(len(snaps) - 1, d.dt_s),
        counter_reset=reset,
        steps=c["steps"],
        step_time_s=step_s,
        steps_per_s=_per(1.0, step_s),
        step_window_s=win_s,
        step_window_full_batch=full and step_s is not None,
        decode_running_mean=win_running,
        tokens_per_step=_per(c["generation_tokens"], c["steps"]),
        running_mean=statistics.fmean(running) if running else None,
        running_max=max(running, default=None),
        waiting_max=max(waiting, default=None),
        kv_cache_usage_max=max(kv, default=None),
        kv_capacity_tokens=last.kv_capacity_tokens,
        generation_tokens=c["generation_tokens"],
        prompt_tokens=c["prompt_tokens"],
        preemptions=c["preemptions"],
        prefix_cache_hit_tokens=c["prefix_cache_hit_tokens"],
        prefix_cache_query_tokens=c["prefix_cache_query_tokens"],
        spec_accepted_tokens=c["spec_accepted_tokens"],
        spec_draft_tokens=c["spec_draft_tokens"],
        ttft_p50_s=ttft[0],
        ttft_p99_s=ttft[1],
        itl_p50_s=itl[0],
        itl_p99_s=itl[1],
        e2e_p50_s=e2e[0],
        e2e_p99_s=e2e[1],
        # a series stuck at 0 while steps ran means vLLM runs without --enable-mfu-metrics
        estimated_read_bytes_per_step=_per(read, c["steps"]) if read else None,
        estimated_flops_per_step=_per(flops, c["steps"]) if flops else None,
    )
