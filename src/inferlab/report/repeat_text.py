"""A peer's repeated benchmark (AIPerf `--num-profile-runs N`) in words and tables: each
run's statistics and whether it is the same measurement, then inferlab's 95 % intervals
(ci95, the long-run value: bootstrap over the per-request records of the runs kept, and of
the runs left out, pooled apart; pi95, where the next run lands, where two runs or more
were kept) beside the tool's own (over every run). Console and HTML share the tables.

No interval is shown below zero: the tool's own low end, where it was negative, is shown
clipped at 0 and a footnote says so (peers/repeat_records.ToolInterval).
"""

from __future__ import annotations

from inferlab.peers.repeat_records import RepeatRun, RepeatsBlock, ToolInterval
from inferlab.summary import Interval, LatencyStats, RepeatStats, RunSummary, Uncertainty

KEY = "peer_repeats"  # the summary's extra block (peers/judge.py writes it)
ROWS = (  # (name, unit, quantity, scale to the unit)
    *((f"TTFT {p}", "ms", f"ttft_s.{p}", 1e3) for p in ("p50", "p90", "p99")),
    *((f"TPOT {p}", "ms", f"tpot_s.{p}", 1e3) for p in ("p50", "p90", "p99")),
    *((f"E2E {p}", "ms", f"e2e_s.{p}", 1e3) for p in ("p50", "p90", "p99")),
    ("output", "tok/s", "output_tokens_per_s_total", 1.0),
)
VERDICT = {
    "same_measurement": "same",
    "cache_served": "cache-served",
    "unlike_first": "unlike run 1",
}
CLOSE = 5e-4  # a tool's own figure this near ours (relative) is the same figure


def repeats_of(s: RunSummary) -> RepeatsBlock | None:
    """The summary's repeats block, every value checked; None when it has none."""
    raw = s.extra.get(KEY)
    return None if raw is None else RepeatsBlock.from_json(raw, KEY)


def _three(st: LatencyStats, scale: float = 1e3, places: int = 1) -> str:
    """p50/p90/p99 in one cell."""
    xs = (st.p50, st.p90, st.p99)
    return "/".join("-" if x is None else f"{x * scale:.{places}f}" for x in xs)


def run_table(block: RepeatsBlock) -> tuple[list[str], list[list[str]]]:
    """One row a run: its statistics recomputed from its records, and its verdict."""
    head = ["run", "verdict", "ok", "TTFT ms p50/90/99", "TPOT ms p50/90/99"]
    head += ["E2E s p50/90/99", "tok/s", "cache"]
    rows = []
    for r in block.runs:
        st, share = r.stats, r.prompt_cache_share
        verdict = VERDICT[r.verdict]
        if r.verdict != "same_measurement" and r.label in block.kept:
            verdict += " (kept)"  # every run was flagged: pooled all the same
        rows.append(
            [
                r.label,
                verdict,
                str(st.requests_ok),
                _three(st.ttft_s),
                _three(st.tpot_s),
                _three(st.e2e_s, 1.0, 2),
                f"{st.output_tokens_per_s_total:.1f}",
                "-" if share is None else f"{share:.0%}",
            ]
        )
    return head, rows


def _ours(u: Uncertainty | None, quantity: str, scale: float, alone: float | None) -> str:
    """The value and its interval; a statistic with no interval (throughput of one run:
    it is resampled over runs) as its value alone."""
    iv: Interval | None = u.of(quantity) if u is not None else None
    if iv is None:
        return "-" if alone is None else f"{alone * scale:.1f} (one run)"
    lo, hi = iv.ci95[0], iv.ci95[-1]
    return f"{iv.value * scale:.1f} [{lo * scale:.1f}, {hi * scale:.1f}]"


def _next(u: Uncertainty | None, quantity: str, scale: float) -> str:
    """pi95, where one more run would land; `-` where there is none (one run)."""
    iv: Interval | None = u.of(quantity) if u is not None else None
    if iv is None or iv.pi95 is None:
        return "-"
    return f"[{iv.pi95[0] * scale:.1f}, {iv.pi95[-1] * scale:.1f}]"


def _predicts(u: Uncertainty | None) -> bool:
    return u is not None and any(iv.pi95 is not None for iv in u.intervals)


def _alone(block: RepeatsBlock, labels: tuple[str, ...], quantity: str) -> float | None:
    """A lone run's throughput (nothing to resample), else None."""
    runs = [r for r in block.runs if r.label in labels]
    if len(runs) != 1 or quantity != ROWS[-1][2]:
        return None
    return runs[0].stats.output_tokens_per_s_total


def _tools(iv: ToolInterval | None, scale: float) -> str:
    if iv is None:
        return "-"
    cv = "" if iv.cv is None else f", {iv.cv:.0%}"
    mark = "*" if iv.low_as_written is not None else ""
    lo, hi = iv.ci[0], iv.ci[-1]
    return f"{iv.mean * scale:.1f} [{lo * scale:.1f}, {hi * scale:.1f}]{cv}{mark}"


def _runs(labels: tuple[str, ...]) -> str:
    return ", ".join(labels)


def interval_table(s: RunSummary, block: RepeatsBlock) -> tuple[list[str], list[list[str]]]:
    """inferlab's interval of each statistic (the level's ci95, its pi95 where two runs or
    more were kept, and the runs apart) beside the tool's own over every run."""
    lv = s.levels[0]
    head = ["", f"inferlab: {lv.label} ({_runs(block.kept)})"]
    nxt = _predicts(lv.uncertainty)
    if nxt:
        head.append("pi95: next run")
    if block.apart:
        head.append(f"apart ({_runs(block.apart)})")
    tool = block.tool
    if tool is not None:
        head.append(f"{tool.tool}: mean of {tool.runs} runs, CV")
    rows = []
    for name, unit, q, scale in ROWS:
        row = [f"{name} {unit}", _ours(lv.uncertainty, q, scale, _alone(block, block.kept, q))]
        if nxt:
            row.append(_next(lv.uncertainty, q, scale))
        if block.apart:
            row.append(_ours(block.apart_uncertainty, q, scale, _alone(block, block.apart, q)))
        if tool is not None:
            row.append(_tools(tool.of(q), scale))
        rows.append(row)
    return head, rows


def _differs(mine: float | None, theirs: float | None) -> bool:
    return mine is not None and theirs is not None and abs(mine - theirs) > CLOSE * abs(mine)


def _as_written(r: RepeatRun, tool: str) -> str | None:
    """The tool's own TPOT and tok/s for a run, where they differ from the recomputed."""
    w: RepeatStats | None = r.as_written
    if w is None:
        return None
    st = r.stats
    tpot = _differs(st.tpot_s.p50, w.tpot_s.p50) or _differs(st.tpot_s.p99, w.tpot_s.p99)
    tok = _differs(st.output_tokens_per_s_total, w.output_tokens_per_s_total)
    if not (tpot or tok):
        return None
    return (
        f"{r.label} as {tool} wrote it: TPOT p50/p90/p99 {_three(w.tpot_s)} ms, "
        f"{w.output_tokens_per_s_total:.1f} tok/s"
    )


def _combined(s: RunSummary, block: RepeatsBlock) -> str:
    lv, n = s.levels[0], len(block.runs)
    if not block.apart:
        flagged = [r.label for r in block.runs if r.verdict != "same_measurement"]
        why = " (every run was flagged: not one measurement)" if flagged else ""
        return f"{lv.label} combines all {n} runs{why}."
    kept = len(block.kept)
    drift = (
        "one run kept, so its intervals do not cover drift between runs"
        if kept == 1
        else "its intervals are bootstrapped over the runs kept, then their requests"
    )
    return (
        f"{lv.label} combines {_runs(block.kept)} ({kept} of {n} runs; {_runs(block.apart)} "
        f"left out as not the same measurement, shown apart): {drift}."
    )


def repeat_notes(s: RunSummary, block: RepeatsBlock) -> list[str]:
    """The sentences around the two tables."""
    tool = block.tool.tool if block.tool is not None else s.tool
    out = [_combined(s, block)]
    written = [x for r in block.runs if (x := _as_written(r, tool)) is not None]
    if written:
        out.append(
            "; ".join(written) + " (its tokenizer's count of the output tokens; the "
            "server's is used here)."
        )
    out.append(f"Rule: {block.rule}.")
    if block.tool is not None:
        out.append(f"{tool}'s interval: {block.tool.method}.")
        out += _clipped(block.tool.intervals, tool)
    return out


def _clipped(intervals: tuple[ToolInterval, ...], tool: str) -> list[str]:
    """The footnote to the tool's intervals shown clipped at 0, with its own low ends."""
    shown = {q: (name, unit, scale) for name, unit, q, scale in ROWS}
    low = []
    for iv in intervals:
        if iv.low_as_written is not None and iv.quantity in shown:
            name, unit, scale = shown[iv.quantity]
            low.append(f"{name} {iv.low_as_written * scale:.1f} {unit}")
    if not low:
        return []
    return [
        f"*: {tool}'s own low end was below zero ({', '.join(low)}): shown clipped at 0, "
        "since no time or rate is negative."
    ]


def _text_table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(head, *rows, strict=True)]
    return [
        "  ".join(
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()
        for r in [head, *rows]
    ]


def repeat_lines(s: RunSummary) -> list[str]:
    """Printed under a peer's sweep table: the runs, then the intervals side by side."""
    block = repeats_of(s)
    if block is None or not s.levels:
        return []
    tool = block.tool.tool if block.tool is not None else s.tool
    out = [f"{tool} ran {len(block.runs)} runs back to back; each read from its own records:"]
    out += _text_table(*run_table(block))
    nxt = _predicts(s.levels[0].uncertainty)
    out.append(
        "95 % intervals, inferlab's ci95 (the long-run value: bootstrap over the per-request "
        "records)"
        + (", its pi95 (where the next run lands: over the runs' own values)" if nxt else "")
        + f" beside {tool}'s (over every run, as it wrote them):"
    )
    out += _text_table(*interval_table(s, block))
    return out + repeat_notes(s, block)
