"""Three sentences that read a sweep the way the lesson does, and the facts beside them."""

from __future__ import annotations

from inferlab.metrics.decomposition import level_batch, read_engine
from inferlab.metrics.verdict import (
    TimeNumbers,
    Verdict,
    decide,
    engine_growth,
    engine_step,
    growth_share,
)
from inferlab.summary import LevelSummary, RunSummary
from inferlab.units import fmt_bandwidth, fmt_bytes


def sweep_levels(summary: RunSummary) -> list[LevelSummary]:
    """The levels a sweep is read by: the closed-loop ones (a Poisson or replayed-trace level
    is read apart), by load (a --find-max-load search measures them out of order)."""
    levels = summary.levels
    if summary.paired is not None:  # bench --url A --url B: the baseline's own sweep
        base = f"{summary.paired.endpoints[0].label} "
        levels = tuple(x for x in levels if x.label.startswith(base))
    done = sorted((x for x in levels if x.tpot_s.p50), key=lambda x: x.value)
    return [x for x in done if x.concurrency is not None] or done


def read_sweep(summary: RunSummary) -> list[str]:
    lv = sweep_levels(summary)
    if not lv:
        return ["No level completed a request, so there is nothing to read."]
    out = _bound_and_batching(lv[0], lv[-1], len(lv))
    v = sweep_verdict(summary)
    if v is not None and v.where == "unknown":
        v = None  # no floor and no engine alone: the growth sentence above is the reading
    if v is not None and out and out[0].startswith("Bound:"):
        out[0] = f"Bound: at {lv[-1].label}, {v.sentence()}."
    elif v is not None:
        out.insert(0, f"Verdict: at {lv[-1].label}, {v.sentence()}.")
    floor = _floor_sentence(summary, lv[0])
    if floor:
        out.append(floor)
    out.extend(read_engine(summary))
    return out


def sweep_verdict(summary: RunSummary) -> Verdict | None:
    """The one verdict (metrics/verdict.py) at the sweep's last level: its served TPOT,
    floor and engine-alone step, and the growth (engine alone if measured, else served)."""
    lv = sweep_levels(summary)
    if not lv:
        return None
    first, last = lv[0], lv[-1]
    eb = summary.engine_baseline
    growth = engine_growth(eb) if eb is not None else None
    c1, cn = first.concurrency, last.concurrency
    if growth is None and c1 and cn and cn > c1 and first.tpot_s.p50:
        share = growth_share(first.tpot_s.p50, last.tpot_s.p50 or 0.0, c1, cn)
        growth = share, f"served, {first.label} -> {last.label}"
    return decide(
        TimeNumbers(
            last.tpot_s.p50 or 0.0,
            last.comparison.predicted_step_time_s if last.comparison else None,
            engine_step(eb, level_batch(last)),
            growth[0] if growth else None,
            growth[1] if growth else "",
        )
    )


def _bound_and_batching(first: LevelSummary, last: LevelSummary, n_levels: int) -> list[str]:
    c1 = first.concurrency if first.concurrency is not None else 1
    cn = last.concurrency if last.concurrency is not None else 1
    t1, tn = first.tpot_s.p50 or 0.0, last.tpot_s.p50 or 0.0
    a1, an = first.output_tokens_per_s_total, last.output_tokens_per_s_total
    out = []
    # 1. Memory- or compute-bound: does a step get slower as streams share it?
    if n_levels > 1 and cn > c1:
        growth, ratio = tn / t1, cn / c1
        # Marginal cost of a stream: 0 if the batch shares the whole step (a pure weight
        # read, memory-bound), 1 if every stream adds a full step of work (compute-bound).
        share = (growth - 1) / (ratio - 1)
        if share >= 0.4:
            bound = (
                f"each step got {growth:.2g}x longer for {ratio:g}x the streams (each extra "
                f"stream costs {share:.0%} of a lone step), so the work grows with the batch: "
                "decode here is compute-bound (dequantising and multiplying on the CPU), "
                "not limited by the shared weight read"
            )
        elif share <= 0.15:
            bound = (
                f"each step got only {growth:.2g}x longer for {ratio:g}x the streams: the "
                "weight read is shared by the batch, so decode here is memory-bound"
            )
        else:
            bound = (
                f"each step got {growth:.2g}x longer for {ratio:g}x the streams (each extra "
                f"stream costs {share:.0%} of a lone step): partly shared, partly compute"
            )
        out.append(f"Bound: {bound}.")
        out.append(
            f"Batching bought {an / a1:.2g}x the aggregate throughput ({a1:.0f} -> "
            f"{an:.0f} tok/s, not {cn / c1:g}x) while each user's time per token went from "
            f"{t1 * 1e3:.1f} to {tn * 1e3:.1f} ms."
        )
    else:
        out.append(f"One level only: {t1 * 1e3:.1f} ms per token, {a1:.0f} tok/s in aggregate.")
    return out


def _floor_sentence(summary: RunSummary, first: LevelSummary) -> str | None:
    fl, cmp = summary.floor, first.comparison
    if not fl or not cmp or not cmp.predicted_step_time_s:
        return None
    pred = cmp.predicted_step_time_s
    t1 = first.tpot_s.p50 or 0.0
    where = f"at concurrency {first.concurrency:g}" if first.concurrency else f"at {first.label}"
    how = (
        f"{cmp.flops_per_step / 1e9:.3g} GFLOP per step / "
        f"{fl.peak_flops_per_s / 1e9:.0f} GFLOP/s = {pred * 1e3:.2f} ms (compute-bound: "
        f"longer than {fmt_bytes(cmp.bytes_per_step)} / {fmt_bandwidth(fl.bandwidth_bytes_per_s)})"
        if cmp.predicted_bound == "compute"
        else f"{fmt_bytes(cmp.bytes_per_step)} per step / "
        f"{fmt_bandwidth(fl.bandwidth_bytes_per_s)} = {pred * 1e3:.2f} ms"
    )
    return (
        f"Floor: {how} "
        f"(<= {1 / pred:.0f} tok/s per user at {first.label}); {where} the server runs "
        f"{t1 / pred:.1f}x above it (MBU {cmp.mbu or 0.0:.0%}), as real systems do: the floor "
        "says where the ceiling is, not where you are."
    )


def setup_facts(summary: RunSummary) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = [
        ("command", " ".join(summary.command)),
        ("tool", summary.tool),
    ]
    server = summary.server
    facts.append(("server", f"{server.kind} at {server.url}, model {server.model}"))
    w = summary.workload
    facts.append(
        (
            "workload",
            f"{w.prompt_tokens} prompt tokens, {w.output_tokens} "
            f"forced output tokens, {w.requests_per_level} requests per level",
        )
    )
    fl = summary.floor
    if fl:
        facts.append(
            (
                "floor model",
                f"{fl.model}: {fmt_bytes(fl.weight_bytes_per_step)} "
                f"per step, KV {fmt_bytes(fl.kv_bytes_per_token)}/token ({fl.model_source})",
            )
        )
        facts.append(
            (
                "floor hardware",
                f"{fl.hardware}: {fmt_bandwidth(fl.bandwidth_bytes_per_s)} ({fl.hardware_source})",
            )
        )
    for k, v in summary.extra.items():
        facts.append((k, str(v)))
    host = summary.client_host or {}
    facts.append(("client", ", ".join(f"{k} {v}" for k, v in host.items())))
    return facts
