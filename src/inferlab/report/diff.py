"""Two runs of one workload side by side, level by level, with the difference.

A simulated run beside a measured one (did the prediction hold?) or two servers (which
is faster, where?). Levels are matched by label; a level left unmatched is then matched
by its load (a simulated `users=4` is the closed loop a bench run calls `c=4`). Levels
found on one side only are named, never silently dropped.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from inferlab.report.console import sweep_rows
from inferlab.summary import LevelSummary, RunSummary

# (name, unit, value of a level); None where the level has no such number.
METRICS: tuple[tuple[str, str, Callable[[LevelSummary], float | None]], ...] = (
    ("requests ok", "", lambda lv: float(lv.requests_ok)),
    ("TTFT p50", "ms", lambda lv: _ms(lv.ttft_s.p50)),
    ("TTFT p99", "ms", lambda lv: _ms(lv.ttft_s.p99)),
    ("TPOT p50", "ms", lambda lv: _ms(lv.tpot_s.p50)),
    ("TPOT p99", "ms", lambda lv: _ms(lv.tpot_s.p99)),
    ("E2E p50", "ms", lambda lv: _ms(lv.e2e_s.p50)),
    ("gap p99", "ms", lambda lv: _ms(lv.gap_s.p99)),
    ("tok/s total", "", lambda lv: lv.output_tokens_per_s_total),
    ("tok/s per user", "", lambda lv: lv.output_tokens_per_s_per_user),
)


def _ms(x: float | None) -> float | None:
    return None if x is None else x * 1e3


@dataclass(frozen=True, slots=True)
class MetricDiff:
    """One number of a level on both sides: b - a, and b / a where a is not zero."""

    name: str
    unit: str
    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def ratio(self) -> float | None:
        return None if self.a is None or self.b is None or self.a == 0 else self.b / self.a


@dataclass(frozen=True, slots=True)
class LevelPair:
    label: str  # "c=4" or, matched by load, "users=4 | c=4"
    a: LevelSummary
    b: LevelSummary

    @property
    def metrics(self) -> tuple[MetricDiff, ...]:
        return tuple(MetricDiff(n, u, f(self.a), f(self.b)) for n, u, f in METRICS)


@dataclass(frozen=True, slots=True)
class RunDiff:
    name_a: str
    name_b: str
    pairs: tuple[LevelPair, ...]
    only_a: tuple[str, ...]  # labels of levels run A has and B does not
    only_b: tuple[str, ...]


def _load(lv: LevelSummary) -> tuple[str, float]:
    return lv.kind, lv.value


def diff_runs(name_a: str, a: RunSummary, name_b: str, b: RunSummary) -> RunDiff:
    """Levels matched by label first, then the rest by load (kind and value)."""
    by_label = {lv.label: lv for lv in b.levels}
    pairs, rest_a = [], []
    for lv in a.levels:
        if lv.label in by_label:
            pairs.append(LevelPair(lv.label, lv, by_label.pop(lv.label)))
        else:
            rest_a.append(lv)
    by_load = {_load(lv): lv for lv in by_label.values()}
    only_a = []
    for lv in rest_a:
        other = by_load.pop(_load(lv), None) if lv.value else None
        if other is None:
            only_a.append(lv.label)
        else:
            pairs.append(LevelPair(f"{lv.label} | {other.label}", lv, other))
    used = {id(p.b) for p in pairs}
    only_b = tuple(lv.label for lv in b.levels if id(lv) not in used)
    return RunDiff(name_a, name_b, tuple(pairs), tuple(only_a), only_b)


def no_common_levels(d: RunDiff, a: RunSummary, b: RunSummary) -> None:
    """Refuse (one line, exit 2) a comparison with no level in common, naming both sides."""
    if d.pairs:
        return
    from inferlab.errors import InferlabError

    la = ", ".join(lv.label for lv in a.levels) or "none"
    lb = ", ".join(lv.label for lv in b.levels) or "none"
    raise InferlabError(
        f"no level in common to compare: A ({d.name_a}) has {la}; B ({d.name_b}) has {lb}"
    )


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _signed(x: float | None) -> str:
    return "-" if x is None else f"{x:+.4g}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}x"


def diff_rows(d: RunDiff) -> tuple[list[str], list[list[str]]]:
    """One row per (level, metric): the level, metric, A, B, B - A, B / A."""
    head = ["level", "metric", d.name_a, d.name_b, "B - A", "B / A"]
    rows = []
    for p in d.pairs:
        for i, m in enumerate(p.metrics):
            unit = f" {m.unit}" if m.unit else ""
            rows.append(
                [p.label if i == 0 else "", m.name + unit, _num(m.a), _num(m.b)]
                + [_signed(m.delta), _ratio(m.ratio)]
            )
    return head, rows


def one_side_lines(d: RunDiff) -> list[str]:
    out = []
    if d.only_a:
        out.append(f"only in A ({d.name_a}): {', '.join(d.only_a)}")
    if d.only_b:
        out.append(f"only in B ({d.name_b}): {', '.join(d.only_b)}")
    if not d.pairs:
        out.append("no level is in both runs: nothing to compare")
    return out


def print_diff(d: RunDiff, file: IO[str] | None = None) -> None:
    """The diff as a rich table that fits 100 columns, then the one-sided levels."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    head, rows = diff_rows(d)
    t = Table(title=f"A: {d.name_a}   B: {d.name_b}", box=box.SIMPLE_HEAD)
    for h in head:
        t.add_column(h, justify="left" if h in ("level", "metric") else "right")
    for r in rows:
        t.add_row(*r)
    c = Console(file=file)
    c = Console(file=file, width=min(c.width, 100) if c.is_terminal else 100)
    c.print(t)
    for line in one_side_lines(d):
        c.print(line, highlight=False)


def _table(head: list[str], rows: list[list[str]]) -> str:
    out = "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
    for r in rows:
        out += "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
    return out + "</table>"


def render_diff_html(
    d: RunDiff,
    a: RunSummary,
    b: RunSummary,
    path: Path,
    verdicts: tuple[list[str], list[list[str]]] | None = None,
    per_request: Path | None = None,
) -> Path:
    """One self-contained page: the diff, the verdicts (B against A, beyond noise?) where
    both runs had records, each request in both runs (report/per_request.py) where they
    scheduled the same ones, then each run's full sweep table (every column)."""
    from inferlab.report.html import CSS, img, peer_section

    notes = "".join(f"<li>{html.escape(x)}</li>" for x in one_side_lines(d))
    judged = "" if verdicts is None else f"<h2>B against A, beyond noise?</h2>{_table(*verdicts)}"
    if per_request is not None:
        judged += f"<h2>Request by request</h2>{img(per_request)}"
    doc = f"""<!doctype html><html><head><meta charset="utf-8">
<title>inferlab: {html.escape(d.name_a)} vs {html.escape(d.name_b)}</title>
<style>{CSS}</style></head><body>
<h1>A: {html.escape(d.name_a)} &nbsp; B: {html.escape(d.name_b)}</h1>
<h2>Level by level</h2>{_table(*diff_rows(d))}
<ul>{notes}</ul>{judged}
<h2>A: {html.escape(d.name_a)}</h2>{_table(*sweep_rows(a))}{peer_section(a)}
<h2>B: {html.escape(d.name_b)}</h2>{_table(*sweep_rows(b))}{peer_section(b)}
</body></html>"""
    path.write_text(doc, encoding="utf-8")
    return path
