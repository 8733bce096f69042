"""A peer's run against the floor, the honesty checks and an SLO: one RunSummary.

Per level: the floor at the batch it ran (the stated concurrency, else the mean number of
requests in flight from the per-request start and end times, else Little's law over the
tool's rate and mean E2E), MBU on the file's TPOT p50 (basis `client_tpot`), and how many
times above the floor that is. The checks are bench's own (metrics/checks.py) where the
file has per-request values, plus the ones a foreign file needs: output lengths not
forced, too few requests, and a TTFT below the prefill's compute floor.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from inferlab.metrics.checks import check_level
from inferlab.metrics.compare import compare_at
from inferlab.peers.common import PeerLevel, PeerRun, prefill_floor_s
from inferlab.peers.repeat_records import RepeatsBlock
from inferlab.peers.repeats import combine
from inferlab.physics.decode import decode_point
from inferlab.physics.floor import Floor, floor_block
from inferlab.records import RequestRecord
from inferlab.slo.attainment import evaluate
from inferlab.slo.grammar import PERCENTILE_Q, Slo
from inferlab.slo.outcome import outcomes
from inferlab.summary import (
    SCHEMA_VERSION,
    ClientStats,
    LevelSummary,
    RunSummary,
    RunWarning,
    ServerBlock,
    Workload,
)

FEW_REQUESTS = 20  # below it a p90 rests on one or two requests


def mean_in_flight(records: tuple[RequestRecord, ...]) -> float | None:
    """Requests in flight, time-averaged from first send to last end (sum of E2E / window)."""
    spans = [(r.send_ns, r.event_ns[-1]) for r in records if r.ok]
    if not spans:
        return None
    start, end = min(s for s, _ in spans), max(e for _, e in spans)
    if end <= start:
        return float(len(spans))
    return sum(e - s for s, e in spans) / (end - start)


def batch_of(lv: PeerLevel) -> tuple[float | None, str]:
    """The batch the level ran at, and where that figure comes from."""
    s = lv.summary
    if s.kind == "concurrency" and s.concurrency and s.label != "as recorded":
        return s.concurrency, "the stated concurrency"
    if lv.records and lv.send_times:
        return mean_in_flight(lv.records), "the mean in flight, from per-request start and end"
    if lv.in_flight_stated:
        return lv.in_flight_stated, "the tool's own mean of requests in flight"
    if s.e2e_s.mean and s.window_s and s.requests_ok:
        little = s.requests_ok / s.window_s * s.e2e_s.mean
        return little, "Little's law: the tool's request rate x its mean E2E"
    return None, "unknown: the file states no concurrency and no per-request times"


def _below_floor(lv: PeerLevel, f: Floor) -> tuple[list[float], int]:
    """(the TTFTs that beat their own prompt's prefill floor, requests judged)."""
    below, judged = [], 0
    for r in lv.records:
        if not r.ok or not r.prompt_tokens:
            continue
        floor_s = prefill_floor_s(f, r.prompt_tokens)
        if floor_s is None:
            continue
        judged += 1
        ttft_s = (r.event_ns[0] - r.send_ns) * 1e-9
        if ttft_s < floor_s:
            below.append(ttft_s)
    return below, judged


def _ttft_below_compute(lv: PeerLevel, f: Floor) -> RunWarning | None:
    """The level's TTFT p50 (aggregates), or any request's TTFT (per request), below what
    the prompt's prefill takes at the stated FLOP/s."""
    s, prompt = lv.summary, lv.prompt_tokens_mean
    floor_s = prefill_floor_s(f, prompt) if prompt else None
    if floor_s is None or s.ttft_s.p50 is None or prompt is None:
        return None
    below, judged = _below_floor(lv, f)
    if lv.records and not below or not lv.records and s.ttft_s.p50 >= floor_s:
        return None
    flops = f.peak_flops_per_s
    who = f"TTFT p50 {s.ttft_s.p50 * 1e3:.4g} ms is"
    if lv.records:
        who = f"{len(below)} of {judged} requests had a TTFT (fastest {min(below) * 1e3:.4g} ms)"
    msg = (
        f"{who} below the {floor_s * 1e3:.3g} ms that prefilling {prompt:.0f} prompt tokens "
        f"takes at {flops / 1e9:.4g} GFLOP/s: the prompts came from a cache, or the lengths "
        "are not what the file says"
    )
    return RunWarning("ttft_below_prefill_floor", s.label, "error", msg)


def _lengths_not_forced(lv: PeerLevel) -> RunWarning | None:
    outs = [r.n_out for r in lv.records if r.ok]
    if len(set(outs)) < 2:
        return None
    msg = (
        f"output lengths vary from {min(outs)} to {max(outs)} tokens: they were not forced "
        "(ignore_eos), or the tool counted them by re-tokenizing the text; TPOT divides by "
        "these counts and mixes requests of different lengths"
    )
    return RunWarning("output_lengths_vary", lv.summary.label, "warning", msg)


def _few_requests(lv: PeerLevel) -> RunWarning | None:
    n = lv.summary.requests_ok
    if n >= FEW_REQUESTS:
        return None
    msg = f"only {n} successful requests: p90 and above rest on one or two of them"
    return RunWarning("few_requests", lv.summary.label, "info", msg)


def level_warnings(lv: PeerLevel, f: Floor | None) -> list[RunWarning]:
    """bench's checks on the records (or the summary alone), then the peer-file checks."""
    s = lv.summary
    ceiling = None
    if f is not None:
        ctx = round(lv.prompt_tokens_mean or 1)
        ceiling = decode_point(f.cost, f.hardware, 1, ctx).tokens_per_s_per_user
    recs = list(lv.records)
    warns = check_level(s, recs, 0, ceiling, ClientStats.idle(), per_request_target=True)
    if not recs:  # these two count what the records hold: none here
        warns = [w for w in warns if w.code not in ("tpot_unseen", "few_samples")]
    # A peer's events are its stream chunks and its counts its own (vLLM re-tokenizes, and
    # times the final empty chunk): chunks != tokens says nothing about the server here.
    warns = [w for w in warns if w.code not in ("token_count_mismatch", "multi_token_events")]
    extra = [_lengths_not_forced(lv)]
    if not s.source or not s.source.tool.startswith("llama"):  # an engine alone: no requests
        extra.append(_few_requests(lv))
    if f is not None:
        extra.append(_ttft_below_compute(lv, f))
    return warns + [w for w in extra if w is not None]


def compare_level(lv: PeerLevel, f: Floor) -> LevelSummary:
    s = lv.summary
    batch, _ = batch_of(lv)
    ctx = round((lv.prompt_tokens_mean or 0) + (lv.output_tokens_mean or 0) / 2)
    comp = compare_at(f.cost, f.hardware, max(1, round(batch or 1)), ctx, s.tpot_s.p50)
    if comp.mbu is not None:
        comp = dataclasses.replace(comp, mbu_basis="client_tpot")
    return dataclasses.replace(s, comparison=comp)


def slo_on_percentiles(s: LevelSummary, slo: Slo) -> list[dict[str, Any]]:
    """An aggregate-only level against an SLO: a per-request objective is judged on the
    percentile at --min-attainment (p90 for 0.9: it holds only if that many requests met
    it), or the next one above that the file states; a level objective on its own."""
    out = []
    stats = {"ttft": s.ttft_s, "tpot": s.tpot_s, "e2e": s.e2e_s}
    wanted: list[tuple[str, str, float, str | None]]
    wanted = [(o.name, o.metric, o.limit_s, None) for o in slo.per_request]
    wanted += [(o.name, o.metric, o.limit_s, o.percentile) for o in slo.per_level]
    for name, metric, limit, pct in wanted:
        st = stats.get(metric)
        keys = (
            [pct] if pct else [k for k, q in PERCENTILE_Q.items() if q >= slo.min_attainment * 100]
        )
        got = next(((k, v) for k in keys if st and (v := getattr(st, k)) is not None), None)
        holds = None if got is None else got[1] <= limit
        out.append(
            {
                "objective": name,
                "limit_s": limit,
                "judged_on": got[0] if got else None,
                "value_s": got[1] if got else None,
                "holds": holds,
            }
        )
    return out


def judge_level(lv: PeerLevel, f: Floor | None, slo: Slo | None) -> LevelSummary:
    s = compare_level(lv, f) if f is not None else lv.summary
    if slo is None:
        return s
    if lv.records:
        judged = evaluate(slo, outcomes(list(lv.records)))
        if not lv.send_times and s.window_s and judged.window_s:  # goodput over its window
            k = judged.window_s / s.window_s
            judged = dataclasses.replace(
                judged,
                goodput_requests_per_s=judged.goodput_requests_per_s * k,
                goodput_tokens_per_s=judged.goodput_tokens_per_s * k,
                window_s=s.window_s,
            )
        return dataclasses.replace(s, slo=judged)
    return dataclasses.replace(s, rest={**s.rest, "slo_on_percentiles": slo_on_percentiles(s, slo)})


def repeat_warnings(block: RepeatsBlock, label: str) -> list[RunWarning]:
    """One warning per run that is not the same measurement as the first, with why."""
    out = []
    for r in block.runs:
        if r.verdict == "same_measurement":
            continue
        msg = f"{r.label}: {r.reason}; left out of the combined level, reported apart"
        if r.label in block.kept:
            msg = f"{r.label}: {r.reason}; pooled all the same (every run was flagged)"
        out.append(RunWarning(f"repeat_{r.verdict}", label, "warning", msg))
    return out


def _mean(levels: tuple[PeerLevel, ...], attr: str) -> int:
    xs = [v for lv in levels if (v := getattr(lv, attr)) is not None]
    return round(sum(xs) / len(xs)) if xs else 0


def summarise(run: PeerRun, f: Floor | None = None, slo: Slo | None = None) -> RunSummary:
    """The peer's run in inferlab's schema, judged against the floor and the SLO given;
    a repeated benchmark's runs combined with that floor (peers/repeats.py), each run that
    is not the same measurement named."""
    run, repeats = combine(run, f)
    levels = tuple(judge_level(lv, f, slo) for lv in run.levels)
    warns = [w for lv in run.levels for w in level_warnings(lv, f)]
    warns += [RunWarning("tool_count_differs", "run", "info", n) for n in run.notes]
    warns += repeat_warnings(repeats, run.levels[0].summary.label) if repeats else []
    batches = {lv.summary.label: batch_of(lv)[1] for lv in run.levels}
    extra: dict[str, object] = {"peer_file": str(run.path), "floor_batch_from": batches}
    if repeats is not None:
        extra["peer_repeats"] = repeats.to_json()
    return RunSummary(
        schema_version=SCHEMA_VERSION,
        tool=run.tool,
        simulated=False,
        command=run.command,
        started_at_unix_s=0.0,
        interrupted=False,
        server=ServerBlock(url=None, kind=None, model=run.model),
        workload=Workload(
            prompt_tokens=_mean(run.levels, "prompt_tokens_mean"),
            output_tokens=_mean(run.levels, "output_tokens_mean"),
            requests_per_level=max((lv.summary.requests_measured for lv in run.levels), default=0),
        ),
        floor=floor_block(f) if f is not None else None,
        extra=extra,
        levels=levels,
        warnings=tuple(warns),
    )
