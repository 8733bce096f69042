"""The server's own books beside the client's numbers: the floor at the batch it really ran,
and named warnings where the two disagree.

`attach_server` is the bench's one call per level: it summarises the level's
scrapes into the level's `server` block, re-prices MBU/MFU at the server's
measured step time and observed batch when it can (`mbu_basis: server_steps`,
else `client_tpot`), and returns the cross-check warnings.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from inferlab.metrics.checks import warning
from inferlab.metrics.compare import compare_at
from inferlab.servermetrics.level_counts import summarize_server_level
from inferlab.servermetrics.sampler import Sample
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec
from inferlab.summary import FloorComparison, LevelSummary, RunWarning, ServerLevelMetrics
from inferlab.vocab import Severity

if TYPE_CHECKING:
    from inferlab.physics.floor import Floor

DISAGREE = 0.10  # client TPOT vs server step time; inferlab's bytes/step vs the engine's
PREFIX_HIT_FRACTION = 0.05  # a few shared tokens (BOS, a template) are not a cache effect


def metrics_unavailable(code: str, message: str, explicit: bool) -> RunWarning:
    """The run-level warning when /metrics gave nothing: the bench goes on client-only."""
    severity: Severity = "warning" if explicit or code != "no_server_metrics" else "info"
    return warning(code, "run", severity, f"{message}; client-side numbers only")


def server_floor(
    srv: ServerLevelMetrics,
    cost: ModelCost,
    hw: HardwareSpec,
    workload: tuple[int, int],
) -> FloorComparison | None:
    """MBU/MFU at the server's step time and observed mean batch; None without them.
    `workload`: (prompt tokens, output tokens): the context is prompt + half the output."""
    if srv.step_time_s is None or not srv.decode_running_mean:
        return None
    batch = max(1, round(srv.decode_running_mean))
    context = int(workload[0] + workload[1] / 2)
    d = compare_at(cost, hw, batch, context, srv.step_time_s)
    return dataclasses.replace(d, mbu_basis="server_steps")


def _scrape_failure(samples: list[Sample], label: str) -> list[RunWarning]:
    bad = [s for s in samples if s.snapshot is None]
    if not bad:
        return []
    code = bad[0].error_code or "no_server_metrics"
    severity: Severity = "info" if len(bad) < len(samples) else "warning"
    msg = f"{len(bad)} of {len(samples)} scrapes of /metrics failed (e.g. {bad[0].error})"
    return [warning(code, label, severity, msg)]


def _disagree(s: LevelSummary, srv: ServerLevelMetrics, target: int | None) -> str | None:
    tpot, step = s.tpot_s.p50, srv.step_time_s
    # One stream is one sample of the pair of clocks: nothing to act on. Past one, a gap
    # within the client's own spread of TPOT (p90 over p50) is noise, not disagreement.
    if not (target and target >= 2 and tpot and step and srv.step_window_full_batch):
        return None
    spread = (s.tpot_s.p90 or tpot) / tpot - 1
    if abs(tpot / step - 1) <= max(DISAGREE, spread):
        return None
    return (
        f"client TPOT p50 {tpot * 1e3:.2f} ms vs the server's {step * 1e3:.2f} ms per step "
        f"while all {target} streams decoded: one of the two clocks is not counting "
        "what the other does (an output path lagging the engine, as vLLM's API process "
        "on a busy CPU; multi-token steps; stalls; a busy client)"
    )


def _prefix_hit(srv: ServerLevelMetrics) -> str | None:
    hits, queries = srv.prefix_cache_hit_tokens, srv.prefix_cache_query_tokens
    if not hits or (queries and hits / queries <= PREFIX_HIT_FRACTION):
        return None
    share = f" of {queries:g} looked up" if queries else ""
    return (
        f"the server's counters show {hits:g} prompt tokens served from its prefix "
        f"cache{share}: TTFT is optimistic"
    )


def _batch(srv: ServerLevelMetrics, target: int | None) -> str | None:
    if not target or srv.running_max is None or srv.running_max >= target:
        return None
    return (
        f"the server ran at most {srv.running_max:g} requests at once of the {target} "
        "sent: its slots / max_num_seqs are fewer; the rest queued"
    )


def _queueing(srv: ServerLevelMetrics, target: int | None) -> str | None:
    if not target or not srv.waiting_max:
        return None
    return (
        f"up to {srv.waiting_max:g} requests waited in the server's queue during this "
        "level: its queue, not the client's, made part of the TTFT"
    )


def check_server(s: LevelSummary, srv: ServerLevelMetrics, target: int | None) -> list[RunWarning]:
    """Named cross-checks of one level; `target` is the concurrency (None for rate levels)."""
    found = {
        "counter_reset": "a server counter went down mid-level: it restarted; this level's "
        "server counters are dropped"
        if srv.counter_reset
        else None,
        "client_server_disagree": _disagree(s, srv, target),
        "batch_not_reached": _batch(srv, target),
        "preempted": f"the server preempted {srv.preemptions:g} times (KV cache full): "
        "recomputation inflates the step count and the latencies"
        if srv.preemptions
        else None,
        "prefix_cache_hit": _prefix_hit(srv),
        "queueing": _queueing(srv, target),
    }
    return [warning(code, s.label, "warning", msg) for code, msg in found.items() if msg]


def check_engine_bytes(
    s: LevelSummary, srv: ServerLevelMetrics, devices: int = 1
) -> tuple[LevelSummary, list[RunWarning]]:
    """inferlab's bytes per step beside the engine's own estimate (vLLM's MFU metrics, which
    count per GPU: times the tensor-parallel devices to stand beside the whole group's)."""
    comp, per_gpu = s.comparison, srv.estimated_read_bytes_per_step
    if comp is None or not per_gpu:
        return s, []
    theirs = per_gpu * devices
    comp = dataclasses.replace(comp, engine_estimated_read_bytes_per_step=theirs)
    s = dataclasses.replace(s, comparison=comp)
    ours = comp.bytes_per_step
    if abs(theirs / ours - 1) <= DISAGREE:
        return s, []
    msg = (
        f"the engine estimates {theirs / 1e6:.1f} MB read per step, inferlab's floor "
        f"{ours / 1e6:.1f} MB at batch {comp.floor_batch}: the model, dtype or KV size "
        "given to the floor may not be what the server runs"
    )
    return s, [warning("floor_disagrees_with_engine", s.label, "warning", msg)]


def _priced(
    s: LevelSummary, srv: ServerLevelMetrics | None, floor: Floor, workload: tuple[int, int]
) -> FloorComparison | None:
    """The level's comparison on the server's basis where possible, else the client's."""
    comp = s.comparison
    if comp is None:
        return None
    priced = server_floor(srv, floor.cost, floor.hardware, workload) if srv else None
    if priced is None:
        return dataclasses.replace(comp, mbu_basis="client_tpot" if comp.mbu else None)
    return dataclasses.replace(priced, mbu_client_tpot=comp.mbu)


def attach_server(
    s: LevelSummary,
    samples: list[Sample],
    target: int | None,
    floor: Floor | None,
    workload: tuple[int, int],
) -> tuple[LevelSummary, list[RunWarning]]:
    """The level with its `server` block (None if no scrape worked) and its MBU basis, and
    the warnings. `floor`: bench's Floor (cost, hardware, devices) or None; `workload`:
    (prompt tokens, output tokens)."""
    warns = _scrape_failure(samples, s.label)
    srv = summarize_server_level(samples, target)
    s = dataclasses.replace(s, server=srv)
    if floor is not None:
        s = dataclasses.replace(s, comparison=_priced(s, srv, floor, workload))
    if srv is None:
        return s, warns
    s, engine = check_engine_bytes(s, srv, floor.devices if floor is not None else 1)
    return s, warns + check_server(s, srv, target) + engine
