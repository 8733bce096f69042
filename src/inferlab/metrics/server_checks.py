"""The server's own books beside the client's numbers: the floor at the batch it really ran,
and named warnings where the two disagree.

`attach_server` is the bench's one call per level: it summarises the level's
scrapes into a `server` block, re-prices MBU/MFU at the server's measured step
time and observed batch when it can (`mbu_basis: server_steps`, else
`client_tpot`), and returns the cross-check warnings.
"""

from __future__ import annotations

from typing import Any

from inferlab.metrics.checks import warning
from inferlab.physics.decode import decode_point
from inferlab.physics.measured import utilisation
from inferlab.servermetrics.level import ServerLevelMetrics, summarize_server_level
from inferlab.servermetrics.sampler import Sample
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec

DISAGREE = 0.10  # client TPOT vs server step time; inferlab's bytes/step vs the engine's
PREFIX_HIT_FRACTION = 0.05  # a few shared tokens (BOS, a template) are not a cache effect


def metrics_unavailable(code: str, message: str, explicit: bool) -> dict[str, str]:
    """The run-level warning when /metrics gave nothing: the bench goes on client-only."""
    severity = "warning" if explicit or code != "no_server_metrics" else "info"
    return warning(code, "run", severity, f"{message}; client-side numbers only")


def server_floor(
    srv: ServerLevelMetrics,
    cost: ModelCost,
    hw: HardwareSpec,
    prompt_tokens: int,
    output_tokens: int,
) -> dict[str, Any] | None:
    """MBU/MFU at the server's step time and observed mean batch; None without them."""
    if srv.step_time_s is None or not srv.decode_running_mean:
        return None
    batch = max(1, round(srv.decode_running_mean))
    context = int(prompt_tokens + output_tokens / 2)
    p = decode_point(cost, hw, batch, context)
    u = utilisation(
        p.bytes_per_step,
        p.flops_per_step,
        srv.step_time_s,
        hw.bandwidth_bytes_per_s,
        hw.peak_flops(cost.compute_dtype),
        p.step_time_s,
    )
    return {
        "mbu_basis": "server_steps",
        "floor_batch": batch,
        "floor_context_tokens": context,
        "bytes_per_step": p.bytes_per_step,
        "flops_per_step": p.flops_per_step,
        "predicted_step_time_s": p.step_time_s,
        "predicted_bound": p.step.bound,
        "measured_step_time_s": srv.step_time_s,
        "achieved_bandwidth_bytes_per_s": u.achieved_bandwidth_bytes_per_s,
        "achieved_flops_per_s": u.achieved_flops_per_s,
        "mbu": u.mbu,
        "mfu": u.mfu,
        "measured_over_floor": srv.step_time_s / p.step_time_s,
    }


def _scrape_failure(samples: list[Sample], label: str) -> list[dict[str, str]]:
    bad = [s for s in samples if s.snapshot is None]
    if not bad:
        return []
    code = bad[0].error_code or "no_server_metrics"
    severity = "info" if len(bad) < len(samples) else "warning"
    return [
        warning(
            code,
            label,
            severity,
            f"{len(bad)} of {len(samples)} scrapes of /metrics failed (e.g. {bad[0].error})",
        )
    ]


def check_server(
    s: dict[str, Any], srv: ServerLevelMetrics, target: int | None
) -> list[dict[str, str]]:
    """Named cross-checks of one level; `target` is the concurrency (None for rate levels)."""
    lv, out = s["label"], []

    def add(code: str, severity: str, message: str) -> None:
        out.append(warning(code, lv, severity, message))

    if srv.counter_reset:
        add(
            "counter_reset",
            "warning",
            "a server counter went down mid-level: it restarted; "
            "this level's server numbers are dropped",
        )
    tpot = (s.get("tpot_s") or {}).get("p50")
    step = srv.step_time_s
    if target and tpot and step and srv.step_window_full_batch and abs(tpot / step - 1) > DISAGREE:
        add(
            "client_server_disagree",
            "warning",
            f"client TPOT p50 {tpot * 1e3:.2f} ms vs the server's {step * 1e3:.2f} ms per step "
            f"while all {target} streams decoded: one of the two clocks is not counting "
            "what the other does (an output path lagging the engine, as vLLM's API process "
            "on a busy CPU; multi-token steps; stalls; a busy client)",
        )
    if target and srv.running_max is not None and srv.running_max < target:
        add(
            "batch_not_reached",
            "warning",
            f"the server ran at most {srv.running_max:g} requests at once of the {target} "
            "sent: its slots / max_num_seqs are fewer; the rest queued",
        )
    if srv.preemptions:
        add(
            "preempted",
            "warning",
            f"the server preempted {srv.preemptions:g} times (KV cache full): recomputation "
            "inflates the step count and the latencies",
        )
    hits, queries = srv.prefix_cache_hit_tokens, srv.prefix_cache_query_tokens
    if hits and (not queries or hits / queries > PREFIX_HIT_FRACTION):
        share = f" of {queries:g} looked up" if queries else ""
        add(
            "prefix_cache_hit",
            "warning",
            f"the server's counters show {hits:g} prompt tokens served from its prefix "
            f"cache{share}: TTFT is optimistic",
        )
    if target and srv.waiting_max:
        add(
            "queueing",
            "warning",
            f"up to {srv.waiting_max:g} requests waited in the server's queue during this "
            "level: its queue, not the client's, made part of the TTFT",
        )
    return out


def check_engine_bytes(
    s: dict[str, Any], srv: ServerLevelMetrics, devices: int = 1
) -> list[dict[str, str]]:
    """inferlab's bytes per step beside the engine's own estimate (vLLM's MFU metrics, which
    count per GPU: times the tensor-parallel devices to stand beside the whole group's)."""
    ours, per_gpu = s.get("bytes_per_step"), srv.estimated_read_bytes_per_step
    if not ours or not per_gpu:
        return []
    theirs = per_gpu * devices
    s["engine_estimated_read_bytes_per_step"] = theirs
    if abs(theirs / ours - 1) <= DISAGREE:
        return []
    return [
        warning(
            "floor_disagrees_with_engine",
            s["label"],
            "warning",
            f"the engine estimates {theirs / 1e6:.1f} MB read per step, inferlab's floor "
            f"{ours / 1e6:.1f} MB at batch {s.get('floor_batch')}: the model, dtype or KV "
            "size given to the floor may not be what the server runs",
        )
    ]


def attach_server(
    s: dict[str, Any],
    samples: list[Sample],
    target: int | None,
    floor: Any,
    workload: tuple[int, int],
) -> list[dict[str, str]]:
    """Put the `server` block (or None) and the MBU basis into `s`; return the warnings.
    `floor`: bench.benchmark.Floor (cost, hardware, devices) or None."""
    warns = _scrape_failure(samples, s["label"])
    srv = summarize_server_level(samples, target)
    s["server"] = srv.to_json() if srv else None
    if floor is not None:
        s["mbu_basis"] = "client_tpot" if s.get("mbu") is not None else None
    if srv is None:
        return warns
    if floor is not None:
        priced = server_floor(srv, floor.cost, floor.hardware, workload[0], workload[1])
        if priced is not None:
            s["mbu_client_tpot"] = s.get("mbu")
            s.update(priced)
    devices = floor.devices if floor is not None else 1
    return warns + check_server(s, srv, target) + check_engine_bytes(s, srv, devices)
