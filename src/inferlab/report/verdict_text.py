"""`report A B`: each level's quantities judged (metrics/verdicts.py) from both runs' raw
records, as a console table, an HTML table, JSON, and the `--fail-if-slower` check."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO

from inferlab.metrics.verdicts import THROUGHPUT, QuantityDiff, compare_level
from inferlab.records import RequestRecord, read_records
from inferlab.report.diff import RunDiff

# quantity -> (name in the table, unit, factor from the stored unit)
NAMES: dict[str, tuple[str, str, float]] = {
    "ttft_s.p50": ("TTFT p50", "ms", 1e3),
    "ttft_s.p99": ("TTFT p99", "ms", 1e3),
    "tpot_s.p50": ("TPOT p50", "ms", 1e3),
    "tpot_s.p99": ("TPOT p99", "ms", 1e3),
    "e2e_s.p50": ("E2E p50", "ms", 1e3),
    THROUGHPUT: ("tok/s total", "", 1.0),
}
RULE = (
    "verdict: B - A with its 95 % interval (bootstrap of both runs' records, by repeat where "
    "they have repeats); within_noise when the interval holds 0 or the difference is no "
    "larger than either run's own repeat spread"
)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every judged quantity of the levels both runs have, and what could not be judged."""

    diffs: tuple[QuantityDiff, ...]
    notes: tuple[str, ...]


def _records(path: Path) -> list[RequestRecord] | None:
    """A run folder's records (None: a peer's file or a folder without records.jsonl)."""
    f = path / "records.jsonl" if path.is_dir() else None
    return read_records(f) if f is not None and f.exists() else None


def compare_paths(d: RunDiff, path_a: Path, path_b: Path) -> Comparison:
    """The verdicts of every level pair, from each side's records.jsonl."""
    ra, rb = _records(path_a), _records(path_b)
    missing = [f"{n}: no records.jsonl" for n, r in ((d.name_a, ra), (d.name_b, rb)) if r is None]
    if ra is None or rb is None:
        return Comparison((), (f"no verdicts ({'; '.join(missing)})",))
    diffs: list[QuantityDiff] = []
    for p in d.pairs:
        a = [r for r in ra if r.level == p.a.label]
        b = [r for r in rb if r.level == p.b.label]
        diffs += compare_level(p.label, a, b)
    return Comparison(tuple(diffs), ())


def _num(q: str, x: float) -> str:
    return f"{x * NAMES[q][2]:.4g}"


def _signed(q: str, x: float) -> str:
    return f"{x * NAMES[q][2]:+.3g}"


def verdict_rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    """One row per (level, quantity): A, B, B - A [95 % interval], relative, verdict."""
    head = ["level", "quantity", "A", "B", "B - A [95 % interval]", "B / A - 1", "verdict"]
    rows, last = [], ""
    for q in c.diffs:
        name, unit, _ = NAMES[q.quantity]
        lo, hi = q.ci95
        rel = "-" if q.relative is None else f"{q.relative:+.1%}"
        span = (
            f"{_signed(q.quantity, q.diff)} [{_signed(q.quantity, lo)}, {_signed(q.quantity, hi)}]"
        )
        rows.append(
            [q.level if q.level != last else "", f"{name} {unit}".strip()]
            + [_num(q.quantity, q.a), _num(q.quantity, q.b), span, rel, q.verdict]
        )
        last = q.level
    return head, rows


def print_verdicts(c: Comparison, file: IO[str] | None = None) -> None:
    """The verdict table, then the rule (or why there is none)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    con = Console(file=file)
    con = Console(file=file, width=min(con.width, 100) if con.is_terminal else 100)
    if c.diffs:
        head, rows = verdict_rows(c)
        t = Table(title="B against A, beyond noise?", box=box.SIMPLE_HEAD)
        for h in head:
            t.add_column(h, justify="left" if h in ("level", "quantity", "verdict") else "right")
        for r in rows:
            t.add_row(*r)
        con.print(t)
        con.print(RULE, highlight=False, markup=False)
        if (thin := thin_line(c)) is not None:
            con.print(thin, highlight=False, markup=False)
    for line in c.notes:
        con.print(line, highlight=False, markup=False)


def failing(c: Comparison, threshold: float) -> list[QuantityDiff]:
    """--fail-if-slower: the quantities B is slower on, beyond noise, by more than threshold
    (a percentile of too few requests, e.g. p99 of under 100, is shown but not gated)."""
    return [q for q in c.diffs if q.verdict == "slower" and q.slower_by > threshold and not q.thin]


def thin_line(c: Comparison) -> str | None:
    """Which judged percentiles have too few requests behind them to gate a pipeline."""
    thin = sorted({q.quantity for q in c.diffs if q.thin})
    if not thin:
        return None
    return (
        f"{', '.join(thin)}: too few requests behind them (p99 needs 100): their verdicts are "
        "shown, and --fail-if-slower does not act on them"
    )


def comparison_json(c: Comparison) -> dict[str, object]:
    """`report A B --json`'s comparison: each quantity with its verdict, difference, interval."""
    return {"quantities": [q.to_json() for q in c.diffs], "notes": list(c.notes), "rule": RULE}
