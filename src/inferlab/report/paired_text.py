"""A paired run's comparison (bench --url A --url B) on the console, and its
--fail-if-slower check.

Per level, a table: each endpoint's TPOT p50, TTFT p50 and tok/s over all its blocks,
then B / A over the block pairs with its 95 % interval, the change it means (B / A - 1,
signed: a tok/s drop reads "-12.0 %"), the verdict, and the smallest change the run
could have found. A line above says the comparison is paired in blocks, and how many
block pairs each level had.
"""

from __future__ import annotations

from typing import IO

from inferlab.metrics.paired import THROUGHPUT, slower_by
from inferlab.report.verdict_text import NAMES  # quantity -> (name, unit, factor)
from inferlab.summary import PairedComparison, PairedLevel, PairedQuantity, PairedRun

RULE = (
    "ratio: B / A per block pair, their geometric mean [95 % interval: t over the pairs' "
    "log-ratios, 95 % for all of the run's comparisons together (Bonferroni)]; "
    "within_noise where the interval holds 1; slower is a time up or a tok/s down; "
    "detectable: the smallest change this run finds 80 % of the time at that confidence; "
    "machine: the share of the pairs' variance the machine canary (read after each block) "
    "removed as a fitted covariate (CUPED), 'no fit' where its slope was within chance"
)


def paired_line(run: PairedRun) -> str:
    """The one line that says how the endpoints were compared."""
    pairs = ", ".join(
        f"{lv.level} {lv.comparisons[0].block_pairs if lv.comparisons else 0}" for lv in run.levels
    )
    labels = [e.label for e in run.endpoints]
    balance = (
        f"as many {labels[0]}-first as {labels[1]}-first pairs"
        if len(labels) == 2
        else "each pair of endpoints as often in one order as in the other"
    )
    return (
        f"paired in blocks: {', '.join(labels)} alternating, one loaded at a time, in a "
        f"randomized order with {balance}; block pairs per level: {pairs}"
    )


def _value(q: str, x: float | None) -> str:
    if x is None:
        return "-"
    name, unit, factor = NAMES.get(q, (q, "", 1.0))
    return f"{x * factor:.4g} {unit}".strip()


def change_text(q: PairedQuantity) -> str:
    """B / A - 1, signed ("-12.0 %": B is 12 % lower); "-" without a ratio."""
    return "-" if q.ratio is None else f"{(q.ratio - 1.0) * 100:+.1f} %"


def ratio_text(q: PairedQuantity) -> str:
    if q.ratio is None:
        return "-"
    if q.ci95 is None:
        return f"{q.ratio:.3f} [no interval: < 2 pairs]"
    return f"{q.ratio:.3f} [{q.ci95[0]:.3f}, {q.ci95[1]:.3f}]"


def _detectable(q: PairedQuantity) -> str:
    d = q.detectable_change_80pct_power
    return "-" if d is None else f"{d * 100:.1f} %"


def _machine(q: PairedQuantity) -> str:
    fit = q.machine_covariate
    if fit is None:
        return "-"
    return f"-{fit.variance_removed * 100:.0f} % var" if fit.applied else "no fit"


def comparison_rows(c: PairedComparison) -> tuple[list[str], list[list[str]]]:
    """One row per quantity: A, B, B / A [interval], change, verdict, detectable, and the
    machine canary's share of the variance (where the run read it)."""
    head = [
        "quantity",
        c.baseline,
        c.endpoint,
        f"{c.endpoint} / {c.baseline} [95 %]",
        "change",
        "verdict",
        "detectable",
    ]
    rows = [
        [
            NAMES.get(q.quantity, (q.quantity,))[0],
            _value(q.quantity, q.a),
            _value(q.quantity, q.b),
            ratio_text(q),
            change_text(q),
            q.verdict,
            _detectable(q),
        ]
        for q in c.quantities
    ]
    if any(q.machine_covariate is not None for q in c.quantities):
        head.append("machine")
        for row, q in zip(rows, c.quantities, strict=True):
            row.append(_machine(q))
    return head, rows


def print_paired(run: PairedRun, file: IO[str] | None = None) -> None:
    """The paired line, a table per level and comparison, then the rule."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    con = Console(file=file)
    con = Console(file=file, width=min(con.width, 110) if con.is_terminal else 110)
    con.print(paired_line(run), highlight=False, markup=False)
    for lv in run.levels:
        for c in lv.comparisons:
            head, rows = comparison_rows(c)
            title = f"{lv.level}: {c.block_pairs} block pairs of {lv.requests_per_block} requests"
            t = Table(title=title, box=box.SIMPLE_HEAD)
            for h in head:
                t.add_column(h, justify="left" if h in ("quantity", "verdict") else "right")
            for r in rows:
                t.add_row(*r)
            con.print(t)
    con.print(RULE, highlight=False, markup=False)


def failing(
    run: PairedRun, threshold: float
) -> list[tuple[PairedLevel, PairedComparison, PairedQuantity]]:
    """--fail-if-slower: every quantity whose verdict is slower and whose point ratio is
    worse than `threshold` (a share: 0.05 is 5 %)."""
    return [
        (lv, c, q)
        for lv in run.levels
        for c in lv.comparisons
        for q in c.quantities
        if q.verdict == "slower" and slower_by(q) > threshold
    ]


def gate_line(lv: PairedLevel, c: PairedComparison, q: PairedQuantity, threshold: float) -> str:
    """--fail-if-slower's reason for one quantity: its signed change and why it is slower."""
    why = "fewer tok/s is slower" if q.quantity == THROUGHPUT else "more time is slower"
    name = NAMES.get(q.quantity, (q.quantity,))[0]
    return (
        f"slower: {lv.level} {c.endpoint} against {c.baseline} {name} {change_text(q)} "
        f"(ratio {ratio_text(q)}; {why}), beyond noise and beyond --fail-if-slower "
        f"{threshold * 100:.1f} %"
    )
