"""The sentences under a peer's file (vLLM, AIPerf, guidellm, ...): where each level came
from, whether its figures were recomputed here or taken as the tool wrote them, a repeated
benchmark's runs and intervals (report/repeat_text.py), the floor at the batch it ran and
MBU with its basis, and an SLO judged on percentiles."""

from __future__ import annotations

from typing import Any

from inferlab.report.repeat_text import repeat_lines
from inferlab.summary import LevelSummary, RunSummary


def _source_line(s: RunSummary) -> str:
    src = next((lv.source for lv in s.levels if lv.source), None)
    if src is None:
        return ""
    tool = f"{src.tool} {src.version}" if src.version else f"{src.tool} (version not in the file)"
    bases = {lv.source.basis for lv in s.levels if lv.source}
    if bases == {"per_request"}:
        how = "recomputed here from its per-request values, by bench's own code"
    elif bases == {"aggregates"}:
        how = (
            "aggregates only: taken as the tool wrote them (not recomputed; an SLO is "
            "judged on its percentiles, not counted per request)"
        )
    else:
        how = "some levels recomputed from per-request values, others the tool's aggregates"
    return f"Read as {tool}: {how}."


def _floor_line(lv: LevelSummary, batch_from: dict[str, Any]) -> str | None:
    c = lv.comparison
    if c is None:
        return None
    where = batch_from.get(lv.label, "")
    line = (
        f"{lv.label}: floor {c.predicted_step_time_s * 1e3:.3g} ms/step at batch "
        f"{c.floor_batch} ({where}), context {c.floor_context_tokens} tokens"
    )
    if c.mbu is None or c.measured_over_floor is None:
        return line + "; no TPOT in the file to hold against it."
    return (
        line + f"; TPOT p50 {(c.measured_step_time_s or 0) * 1e3:.3g} ms is "
        f"{c.measured_over_floor:.3g}x the floor, MBU {c.mbu:.1%} "
        "(basis: client_tpot, the file's TPOT p50 as the step time)."
    )


def _as_written(lv: LevelSummary, tool: str) -> str | None:
    """The tool's own figures where they differ from the recomputed ones, and why."""
    w = lv.rest.get("as_written")
    if not isinstance(w, dict):
        return None
    mine = {
        "ttft_p50_s": lv.ttft_s.p50,
        "tpot_p50_s": lv.tpot_s.p50,
        "output_tokens_per_s": lv.output_tokens_per_s_total,
    }
    if all(
        w.get(k) is None or v is None or abs(v - w[k]) <= 5e-4 * abs(v) for k, v in mine.items()
    ):
        return None

    def ms(x: float | None) -> str:
        return "-" if x is None else f"{x * 1e3:.1f} ms"

    tok = w.get("output_tokens_per_s")
    return (
        f"{lv.label}: as {tool} wrote it: TTFT p50 {ms(w.get('ttft_p50_s'))}, TPOT p50 "
        f"{ms(w.get('tpot_p50_s'))}, {'-' if tok is None else f'{tok:.1f}'} tok/s ({w.get('note')})"
    )


def _slo_on_percentiles(lv: LevelSummary) -> list[str]:
    out = []
    for o in lv.rest.get("slo_on_percentiles") or ():
        if o.get("holds") is None:
            out.append(f"{lv.label}: {o['objective']}: the file states no percentile for it")
            continue
        verdict = "holds" if o["holds"] else "fails"
        out.append(
            f"{lv.label}: {o['objective']} {verdict} on the file's {o['judged_on']} "
            f"({o['value_s'] * 1e3:.4g} ms vs {o['limit_s'] * 1e3:.4g} ms)"
        )
    return out


def peer_lines(s: RunSummary) -> list[str]:
    """The lines printed under the sweep table of a peer's file."""
    out = [x for x in [_source_line(s)] if x] + repeat_lines(s)
    batch_from = s.extra.get("floor_batch_from") or {}
    for lv in s.levels:
        if (line := _as_written(lv, s.tool)) is not None:
            out.append(line)
    for lv in s.levels:
        if (line := _floor_line(lv, batch_from)) is not None:
            out.append(line)
    if s.floor is None:
        out.append(
            "No floor: give --floor-gguf FILE (or --model with --hardware / --bandwidth) "
            "for MBU and the prefill check."
        )
    for lv in s.levels:
        if lv.slo is not None:
            g = lv.slo
            out.append(
                f"{lv.label}: {g.requests_good} of {g.requests} requests met every objective "
                f"of {g.slo} ({g.attainment:.0%}; counted over the file's requests), goodput "
                f"{g.goodput_requests_per_s:.3g} req/s"
            )
        out.extend(_slo_on_percentiles(lv))
    return out
