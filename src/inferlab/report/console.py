"""The sweep table and warnings on the console (rich), narrow by default or `wide`."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from inferlab.report.canary_text import canary_lines
from inferlab.report.interval_text import interval_lines, interval_of, with_interval
from inferlab.summary import LevelSummary, RunSummary, ServerLevelMetrics

if TYPE_CHECKING:
    from rich.table import Table


def _ms(x: float | None) -> str:
    """A cell of an `ms` column; from 10 s on it carries its unit (s, then min), so an
    overloaded level reads '22.6 min', not '1356000.0'."""
    if x is None:
        return "-"
    if abs(x) >= 10.0:
        from inferlab.units import fmt_duration

        return fmt_duration(x, 3)
    return f"{x * 1e3:.1f}"


def _ms_ci(lv: LevelSummary, quantity: str) -> str:
    """An `ms` cell with its 95 % interval where the level has one ("53.1 ±2.4"); from
    10 s on, the value alone in its own unit."""
    field, stat = quantity.split(".")
    value = getattr(getattr(lv, field), stat)
    if value is None or abs(value) >= 10.0:
        return _ms(value)
    return with_interval(lambda x: f"{x * 1e3:.1f}", interval_of(lv, quantity), value)


def sweep_rows(summary: RunSummary) -> tuple[list[str], list[list[str]]]:
    head = [
        "level",
        "ok/fail/early",
        "TTFT p50 ms",
        "TTFT p99 ms",
        "TPOT p50 ms",
        "ITL p99 ms",
        "worst gap ms",
        "stalls",
        "tok/s total",
        "tok/s/user",
        "req/s",
        "in+out tok/s",
        "GB/s",
        "MBU",
    ]
    rows = []
    for lv in summary.levels:
        bw = lv.comparison.achieved_bandwidth_bytes_per_s if lv.comparison else None
        mbu = lv.comparison.mbu if lv.comparison else None
        rows.append(
            [
                lv.label,
                f"{lv.requests_ok}/{lv.requests_failed}/{lv.requests_early_stop}",
                _ms_ci(lv, "ttft_s.p50"),
                _ms_ci(lv, "ttft_s.p99"),
                _ms_ci(lv, "tpot_s.p50"),
                _ms(lv.gap_s.p99),
                _ms(lv.gap_s.max),
                str(lv.stall_count),
                with_interval(
                    lambda x: f"{x:.1f}",
                    interval_of(lv, "output_tokens_per_s_total"),
                    lv.output_tokens_per_s_total,
                ),
                f"{lv.output_tokens_per_s_per_user:.1f}",
                "-" if lv.requests_per_s is None else f"{lv.requests_per_s:.2f}",
                "-" if lv.total_tokens_per_s is None else f"{lv.total_tokens_per_s:.1f}",
                "-" if bw is None else f"{bw / 1e9:.2f}",
                "-" if mbu is None else f"{mbu:.0%}",
            ]
        )
    _insert_floor_engine(summary, head, rows)
    _add_slo_columns(summary, head, rows)
    if any(lv.server for lv in summary.levels):  # the server's own books, beside
        head += ["srv steps/s", "srv tok/step", "srv running", "srv KV max"]
        for row, lv in zip(rows, summary.levels, strict=True):
            row += server_cells(lv.server)
    _add_preemptions(summary, head, rows)
    return head, rows


def _add_preemptions(summary: RunSummary, head: list[str], rows: list[list[str]]) -> None:
    """Preemptions, where any level had one: the server's count with the predicted one
    beside it ("3 (pred 4)"), or a simulated run's own count."""
    levels = summary.levels
    measured = [lv.server.preemptions if lv.server else None for lv in levels]
    predicted = [lv.predicted.preempted if lv.predicted else None for lv in levels]
    if any(measured) or any(predicted):
        head.append("srv preempt")
        for row, m, p in zip(rows, measured, predicted, strict=True):
            cell = "-" if m is None else f"{m:g}"
            row.append(cell if p is None else f"{cell} (pred {p})")
    elif any(lv.preemptions for lv in levels):  # simulated: the level's own count
        head.append("preempt")
        for row, lv in zip(rows, levels, strict=True):
            row.append("-" if lv.preemptions is None else str(lv.preemptions))


def server_cells(srv: ServerLevelMetrics | None) -> list[str]:
    """steps/s, tokens per step, running mean/max, peak KV use; '-' where not published."""
    if srv is None:
        return ["-"] * 4

    def num(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    running = "-"
    if srv.running_mean is not None and srv.running_max is not None:
        running = f"{srv.running_mean:.1f}/{srv.running_max:g}"
    return [
        num(srv.steps_per_s, ".1f"),
        num(srv.tokens_per_step, ".2f"),
        running,
        num(srv.kv_cache_usage_max, ".1%"),
    ]


def _insert_floor_engine(summary: RunSummary, head: list[str], rows: list[list[str]]) -> None:
    """floor / engine alone columns just before the served TPOT, when the run has them."""
    levels = summary.levels
    at = head.index("TPOT p50 ms")
    cols: list[tuple[str, list[str]]] = []
    floors = [lv.comparison.predicted_step_time_s if lv.comparison else None for lv in levels]
    if any(floors):
        # two decimals, as every other place that states a level's floor (report/reading.py)
        cols.append(("floor ms", ["-" if x is None else f"{x * 1e3:.2f}" for x in floors]))
    if any(lv.engine for lv in levels):
        steps = [lv.engine.engine_step_time_s if lv.engine else None for lv in levels]
        cols.append(("engine ms", [_ms(x) for x in steps]))
    for name, cells in reversed(cols):
        head.insert(at, name)
        for row, cell in zip(rows, cells, strict=True):
            row.insert(at, cell)


def _add_slo_columns(summary: RunSummary, head: list[str], rows: list[list[str]]) -> None:
    """goodput and attainment (with --slo), the saturation verdict (open-loop levels)."""
    levels = summary.levels
    if any(lv.slo for lv in levels):
        head += ["SLO", "attain", "goodput req/s", "goodput tok/s"]
        for row, lv in zip(rows, levels, strict=True):
            g = lv.slo
            row += (
                ["-"] * 4
                if g is None
                else [
                    "pass" if g.passed else "fail",
                    f"{g.attainment:.0%}",
                    f"{g.goodput_requests_per_s:.2f}",
                    f"{g.goodput_tokens_per_s:.1f}",
                ]
            )
    if any(lv.saturation for lv in levels):
        head.append("load")
        for row, lv in zip(rows, levels, strict=True):
            row.append(lv.saturation.verdict if lv.saturation else "-")


def slo_lines(summary: RunSummary) -> list[str]:
    """What the SLO columns mean, each overloaded level's caveat, and the search's answer."""
    from inferlab.slo.saturation import GROWING_NOTE, THRESHOLDS

    out: list[str] = []
    judged = [lv.slo for lv in summary.levels if lv.slo]
    if judged:
        g = judged[0]
        out.append(
            f"SLO {g.slo}: a level passes when every level objective holds and at least "
            f"{g.min_attainment:.0%} of its requests meet every per-request objective "
            "(--min-attainment); attainment counts failed requests as misses"
        )
    overloaded = [
        lv.label for lv in summary.levels if lv.saturation and lv.saturation.verdict == "overloaded"
    ]
    if any(lv.saturation for lv in summary.levels):
        out.append(f"load verdict ({THRESHOLDS})")
    if overloaded:
        out.append(f"{', '.join(overloaded)}: {GROWING_NOTE}")
    if summary.max_load is not None:
        out.append(summary.max_load.message)
    return out


# The console's default table: these columns fit 100 characters even with both the floor
# and the engine-alone columns; `--wide` and the HTML report keep every column of sweep_rows.
ESSENTIAL = (
    "level",
    "ok/fail/early",
    "TTFT p50 ms",
    "floor ms",
    "engine ms",
    "TPOT p50 ms",
    "tok/s total",
    "tok/s/user",
    "MBU",
    "SLO",  # with --slo: pass/fail and goodput; attainment with --wide
    "goodput req/s",
    "load",  # open loop: stable / backlogged / overloaded
)
NARROW_WIDTH = 100
SHORT = {
    "tok/s total": "tok/s",  # beside tok/s/user it reads as the total
    "goodput req/s": "good/s",
    # headers on two lines, so no column is wider than its numbers
    "ok/fail/early": "ok/fail/\nearly",
    "TTFT p50 ms": "TTFT\np50 ms",
    "TPOT p50 ms": "TPOT\np50 ms",
    "floor ms": "floor\nms",
    "engine ms": "engine\nms",
    "tok/s/user": "tok/s/\nuser",
}


def essential_rows(summary: RunSummary) -> tuple[list[str], list[list[str]]]:
    """sweep_rows cut to the ESSENTIAL columns."""
    head, rows = sweep_rows(summary)
    keep = [i for i, h in enumerate(head) if h in ESSENTIAL]
    # a skewed interval's ends go under the value, so the narrow table still fits
    cut = [[r[i].replace(" [", "\n[", 1) for i in keep] for r in rows]
    return [SHORT.get(head[i], head[i]) for i in keep], cut


def sweep_table(summary: RunSummary, wide: bool = False) -> Table:
    """The rich table: the essential columns, or every column with `wide`."""
    from rich import box
    from rich.table import Table

    head, rows = sweep_rows(summary) if wide else essential_rows(summary)
    title = "inferlab sweep" if wide else "inferlab sweep (--wide: every column)"
    # one space between columns, none at the edges: the narrow table's width budget
    t = Table(
        title=title, box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False, show_edge=False
    )
    for i, h in enumerate(head):
        # a cell is never cut ("rate=0.…"): each column is at least its widest cell, and a
        # header longer than that wraps instead
        cells = max((len(line) for r in rows for line in r[i].split("\n")), default=0)
        t.add_column(h, justify="right" if h != "level" else "left", min_width=cells)
    for r in rows:
        t.add_row(*r)
    return t


def print_sweep(summary: RunSummary, wide: bool = False, file: IO[str] | None = None) -> None:
    """The table and the warnings. Without `wide` it fits 100 columns (or a narrower
    terminal); with it, a pipe or log file gets 240 so no column is squeezed."""
    from rich.console import Console

    c = Console(file=file)
    if not c.is_terminal:  # a log file or pipe: its width is ours to choose
        c = Console(file=file, width=240 if wide else NARROW_WIDTH)
    elif not wide:
        c = Console(file=file, width=min(c.width, NARROW_WIDTH))
    c.print(sweep_table(summary, wide))
    for line in slo_lines(summary):
        c.print(line, highlight=False)
    shown = sweep_rows(summary) if wide else essential_rows(summary)
    tail = any("?]" in cell for row in shown[1] for cell in row)  # a `[lo, ?]` cell shown
    for line in interval_lines(summary, tail):
        c.print(line, highlight=False, markup=False)  # "[low, high]" is no rich tag
    for line in canary_lines(summary):  # the machine beside the levels (bench)
        c.print(line, highlight=False, markup=False)
    for w in summary.warnings:
        style = {"error": "bold red", "warning": "yellow"}.get(w.severity, "dim")
        c.print(f"[{style}]{w.severity}[/] {w.code} ({w.level}): {w.message}", highlight=False)
