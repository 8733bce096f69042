"""A level's scrapes -> what the server itself counted during it (`ServerLevelMetrics`).

Counters come from the level's first and last good snapshot (their difference).
The step time is wall time / engine steps over the *decode window*: the
intervals between consecutive samples in which every stream of the level
decoded: the whole batch was running at both ends (running >= the
concurrency), no prompt was processed (prompt tokens unchanged) and no request
ended. Prefill, the ramp-up, the drain and idle time do not dilute it (on this
CPU a 32-token prefill of llama.cpp lasts ten decode steps and counts as one).
Without such intervals (rate levels, a batch the server never reached) the
window is where at least one stream decoded, and says so.
"""

from __future__ import annotations

import statistics

from inferlab.servermetrics.sampler import Sample
from inferlab.servermetrics.snapshot import Histogram, Snapshot, delta
from inferlab.summary import ServerLevelMetrics

__all__ = ["ServerLevelMetrics", "summarize_server_level"]


def _per(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


def _gauge(snaps: list[Snapshot], name: str) -> list[float]:
    return [v for s in snaps if (v := getattr(s, name)) is not None]


def _finished(s: Snapshot) -> float | None:
    """A counter that moves when a request ends: the e2e histogram's count where published,
    else llama.cpp's generated tokens (it adds them only when a request ends)."""
    if s.e2e_s is not None:
        return s.e2e_s.count
    return s.generation_tokens if s.dialect == "llamacpp" else None


def _clean(a: Snapshot, b: Snapshot, need: float) -> bool:
    """Between a and b every stream decoded: the batch was in (running >= need at both
    ends), no prompt was processed, no request ended, and the engine stepped."""
    if (a.running or 0) < need or (b.running or 0) < need:
        return False
    if a.prompt_tokens != b.prompt_tokens or _finished(a) != _finished(b):
        return False
    return a.steps is not None and b.steps is not None and b.steps > a.steps


def decode_runs(snaps: list[Snapshot], need: float) -> list[list[Snapshot]]:
    """Maximal runs of consecutive clean intervals (each run: its snapshots, >= 2)."""
    runs: list[list[Snapshot]] = []
    current: list[Snapshot] = []
    for a, b in zip(snaps, snaps[1:], strict=False):
        if _clean(a, b, need):
            current = current or [a]
            current.append(b)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def decode_window(
    snaps: list[Snapshot], target_running: float | None
) -> tuple[list[list[Snapshot]], bool]:
    """The runs where the level's whole batch decoded; else where anything decoded."""
    if target_running:
        full = decode_runs(snaps, target_running)
        if full:
            return full, True
    return decode_runs(snaps, 1.0), False


def _step_time(runs: list[list[Snapshot]]) -> tuple[float | None, float | None, float | None]:
    """(step_time_s, window_s, running mean) summed over the runs: each run's wall time and
    its steps (first to last snapshot, so a count's rounding enters once per run)."""
    if not runs:
        return None, None, None
    wall = sum(r[-1].t_mono_s - r[0].t_mono_s for r in runs)
    steps = sum((r[-1].steps or 0.0) - (r[0].steps or 0.0) for r in runs)
    running = [v for r in runs for s in r if (v := s.running) is not None]
    mean = statistics.fmean(running) if running else None
    return (wall / steps if steps > 0 and wall > 0 else None), wall, mean


def _quantiles(h: Histogram | None) -> tuple[float | None, float | None]:
    return (h.quantile(0.5), h.quantile(0.99)) if h is not None and h.count > 0 else (None, None)


def _acceptance_length(c: dict[str, float | None]) -> float | None:
    """Tokens per verify step, as vLLM defines it: 1 + accepted draft tokens per draft."""
    accepted = _per(c["spec_accepted_tokens"], c["spec_drafts"])
    return None if accepted is None else 1.0 + accepted


def _timely(samples: list[Sample]) -> list[Snapshot]:
    """Snapshots whose time is known well enough to divide by: the server read its counters
    somewhere inside the request's round trip, so a slow scrape (a loaded machine) is left
    out of the step-time window: round trip > max(20 ms, 3 x the level's median)."""
    got = [(s.snapshot, 2 * (s.snapshot.t_mono_s - s.t_mono_s)) for s in samples if s.snapshot]
    if not got:
        return []
    limit = max(0.02, 3 * statistics.median(rt for _, rt in got))
    return sorted((snap for snap, rt in got if rt <= limit), key=lambda x: x.t_mono_s)


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
    win, full = decode_window(_timely(samples), target_running)
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
        spec_drafts=c["spec_drafts"],
        spec_acceptance_rate=_per(c["spec_accepted_tokens"], c["spec_draft_tokens"]),
        spec_mean_acceptance_length=_acceptance_length(c),
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
