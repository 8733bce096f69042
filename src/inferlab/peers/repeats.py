"""A peer's repeated benchmark (AIPerf `--num-profile-runs N`) combined into one level:
which runs are the same measurement as the first, the level over those (pooled and
bootstrapped as `bench --repeat` pools its repeats: metrics/repeats.py), and the runs
left out, with their own intervals, pooled apart.

A run is not the same measurement when its TTFT p50 is below the prefill's compute floor
(with a floor: most of its prompts were never prefilled), or when a later run's TTFT p50 is
under FASTER_THAN_FIRST of the first run's (no floor needed). Such a run is named
`cache_served` where the floor or the server's own cached-prompt counters say a cache
served it, else `unlike_first`; it is not pooled as noise.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from inferlab.metrics.repeats import level_uncertainty, pooled, repeat_stats
from inferlab.peers.common import (
    PeerLevel,
    PeerRepeat,
    PeerRun,
    level_from_records,
    prefill_floor_s,
    source,
)
from inferlab.peers.repeat_records import RepeatRun, RepeatsBlock, Verdict
from inferlab.records import RequestRecord
from inferlab.summary import PeerSource

if TYPE_CHECKING:
    from inferlab.physics.floor import Floor

FASTER_THAN_FIRST = 0.5  # a later run's TTFT p50 under half the first's: another measurement
CACHE_SHARE = 0.5  # the server said at least half the prompt tokens came from its cache
RULE = (
    "a run is left out of the combined level when its TTFT p50 is below the prefill's "
    "compute floor (with a floor), or, after the first, under half of the first run's; "
    "cache_served where the floor or the server's cached-prompt counters say so"
)
ONE_RUN = "bootstrap over requests: one run kept, so the interval does not cover drift between runs"

Chosen = list[tuple[int, PeerRepeat]]


def _ms(x: float) -> str:
    return f"{x * 1e3:.1f} ms"


def _fastest(records: tuple[RequestRecord, ...]) -> tuple[float, int] | None:
    """The fastest request's TTFT (s) and its line in the per-request file (from 1)."""
    ok = [((r.event_ns[0] - r.send_ns) * 1e-9, r.request_id + 1) for r in records if r.ok]
    return min(ok) if ok else None


def _cache_share(records: tuple[RequestRecord, ...]) -> float | None:
    """Prompt tokens the server said it read from its cache, over all prompt tokens; None
    when it reported no such count."""
    counted = [
        r for r in records if r.ok and r.prompt_tokens and r.cached_prompt_tokens is not None
    ]
    total = sum(r.prompt_tokens or 0 for r in counted)
    return sum(r.cached_prompt_tokens or 0 for r in counted) / total if total else None


def _evidence(
    i: int, rep: PeerRepeat, first: PeerRepeat, floor_s: float | None, flops: float
) -> str | None:
    """Why the run is not the same measurement as the first (None: it is)."""
    lv, p50 = rep.level, rep.level.summary.ttft_s.p50
    if p50 is None:
        return None
    out = []
    if floor_s is not None and p50 < floor_s:
        prompt = lv.prompt_tokens_mean or 0
        out.append(
            f"below the {_ms(floor_s)} that prefilling {prompt:.0f} prompt tokens takes at "
            f"{flops / 1e9:.4g} GFLOP/s"
        )
    first_p50 = first.level.summary.ttft_s.p50
    if i > 0 and first_p50 and p50 < FASTER_THAN_FIRST * first_p50:
        out.append(f"under half of {first.label}'s {_ms(first_p50)}")
    return f"TTFT p50 {_ms(p50)} is {' and '.join(out)}" if out else None


def _reason(
    evidence: str, verdict: Verdict, rep: PeerRepeat, first: PeerRepeat, share: float | None
) -> str:
    words = [evidence]
    if (fast := _fastest(rep.level.records)) is not None:
        words.append(f"fastest request {_ms(fast[0])} (line {fast[1]} of its per-request file)")
    if share is not None:
        was = _cache_share(first.level.records)
        then = f" ({first.label}: {was:.0%})" if was is not None and rep is not first else ""
        words.append(
            f"the server reported {share:.0%} of its prompt tokens read from its cache{then}"
        )
    if verdict == "cache_served":
        return "; ".join(words) + ": served from a prompt cache, not prefilled"
    return "; ".join(words) + (
        f": not the same measurement as {first.label} (a prompt cache, or a cold start in "
        f"{first.label})"
    )


def _judge(i: int, rep: PeerRepeat, first: PeerRepeat, f: Floor | None) -> RepeatRun:
    lv = rep.level
    prompt = lv.prompt_tokens_mean
    floor_s = prefill_floor_s(f, prompt) if f is not None and prompt else None
    share = _cache_share(lv.records)
    evidence = _evidence(i, rep, first, floor_s, f.peak_flops_per_s if f is not None else 0.0)
    below = floor_s is not None and (lv.summary.ttft_s.p50 or 0) < floor_s
    verdict: Verdict = "same_measurement"
    if evidence:
        verdict = "cache_served" if below or (share or 0) >= CACHE_SHARE else "unlike_first"
    fast = _fastest(lv.records)
    return RepeatRun(
        label=rep.label,
        repeat=i,
        verdict=verdict,
        reason=None if evidence is None else _reason(evidence, verdict, rep, first, share),
        stats=repeat_stats(i, lv.summary),
        as_written=repeat_stats(i, rep.as_written) if rep.as_written is not None else None,
        ttft_fastest_s=fast[0] if fast else None,
        fastest_line=fast[1] if fast else None,
        prompt_cache_share=share,
        prefill_floor_s=floor_s,
    )


def _moved(r: RequestRecord, ns: int, repeat: int) -> RequestRecord:
    return dataclasses.replace(
        r,
        scheduled_ns=r.scheduled_ns + ns,
        send_ns=r.send_ns + ns,
        event_ns=[t + ns for t in r.event_ns],
        end_ns=r.end_ns + ns,
        repeat=repeat,
    )


def _pooled(chosen: Chosen, src: PeerSource) -> PeerLevel:
    """The runs as one level: one run as read alone; several on one timeline, their
    statistics over every request and their rates over their windows added (as bench
    pools its repeats); the intervals by metrics/repeats.py's two-stage bootstrap."""
    reps = [rep for _, rep in chosen]
    parts = [rep.level.summary for rep in reps]
    lv, s = reps[0].level, parts[0]
    if len(reps) > 1:
        t0 = min(rep.first_send_ns for rep in reps)
        recs = [
            _moved(r, rep.first_send_ns - t0, i) for i, rep in chosen for r in rep.level.records
        ]
        lv = level_from_records(s.label, s.kind, s.value, recs, src)
        s = pooled(lv.summary, parts)
    u = level_uncertainty([list(rep.level.records) for rep in reps], s, parts)
    if u is not None and len(reps) == 1:
        u = dataclasses.replace(u, method=ONE_RUN)
    repeats = tuple(repeat_stats(i, rep.level.summary) for i, rep in chosen)
    s = dataclasses.replace(s, repeats=repeats, uncertainty=u, source=src)
    return dataclasses.replace(lv, summary=s)


def combine(run: PeerRun, f: Floor | None) -> tuple[PeerRun, RepeatsBlock | None]:
    """The run with its one level made from the runs that are the same measurement (every
    run where none is), and the block that names each run and why; as given when the run
    has no repeats."""
    if not run.repeats:
        return run, None
    first = run.repeats[0]
    judged = [_judge(i, rep, first, f) for i, rep in enumerate(run.repeats)]
    same = [(j.repeat, run.repeats[j.repeat]) for j in judged if j.verdict == "same_measurement"]
    apart = [(j.repeat, run.repeats[j.repeat]) for j in judged if j.verdict != "same_measurement"]
    if not same:  # every run flagged: pooled together, and each run says why
        same, apart = apart, []
    src = source(run.tool, run.version, run.path, True)
    block = RepeatsBlock(
        runs=tuple(judged),
        kept=tuple(rep.label for _, rep in same),
        apart=tuple(rep.label for _, rep in apart),
        apart_uncertainty=_pooled(apart, src).summary.uncertainty if apart else None,
        rule=RULE,
        tool=run.tool_aggregate,
    )
    return dataclasses.replace(run, levels=(_pooled(same, src),)), block
