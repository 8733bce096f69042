"""`report A B`: each level's quantities judged (metrics/verdicts.py) from both runs' raw
records, as a console table, an HTML table, JSON, and the `--fail-if-slower` check.

Every change printed is the value's own, B / A - 1, signed: a tok/s drop reads `-45.8 %`
and a TTFT rise `+12.0 %`, and the verdict word says whether that is slower (latency up,
throughput down) or faster. Two runs made apart are unpaired: the line under the table
says so, what change they could not have found, and the paired command that could."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO

from inferlab.metrics.machine_verdict import verdict_words
from inferlab.metrics.verdicts import THROUGHPUT, QuantityDiff, compare_level
from inferlab.records import RequestRecord, read_records
from inferlab.report.diff import RunDiff
from inferlab.summary import WhichSlowed

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
    "larger than either run's own repeat spread; B / A - 1 is the value's own change: "
    "slower is a latency up or a tok/s down"
)
PAIRED_COMMAND = "inferlab bench --url base=URL_A --url new=URL_B"


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every judged quantity of the levels both runs have, and what could not be judged.
    `paired`: both sides' requests alternated in time within one run (so the machine's
    drift cancels); two run folders never are. `apart_s`: B's start - A's, where known."""

    diffs: tuple[QuantityDiff, ...]
    notes: tuple[str, ...]
    paired: bool = False
    apart_s: float | None = None
    # B's canaries at rest against A's (metrics/machine_verdict.py): the machine, the
    # server, both or neither slower between the runs; None where either run has no
    # machine canary
    between: WhichSlowed | None = None


def _records(path: Path) -> list[RequestRecord] | None:
    """A run folder's records (None: a peer's file or a folder without records.jsonl)."""
    f = path / "records.jsonl" if path.is_dir() else None
    return read_records(f) if f is not None and f.exists() else None


def compare_paths(
    d: RunDiff,
    path_a: Path,
    path_b: Path,
    apart_s: float | None = None,
    between: WhichSlowed | None = None,
) -> Comparison:
    """The verdicts of every level pair, from each side's records.jsonl (two run folders:
    unpaired, `apart_s` between their starts where known; `between`: which slowed)."""
    ra, rb = _records(path_a), _records(path_b)
    missing = [f"{n}: no records.jsonl" for n, r in ((d.name_a, ra), (d.name_b, rb)) if r is None]
    if ra is None or rb is None:
        note = f"no verdicts ({'; '.join(missing)})"
        return Comparison((), (note,), apart_s=apart_s, between=between)
    diffs: list[QuantityDiff] = []
    for p in d.pairs:
        a = [r for r in ra if r.level == p.a.label]
        b = [r for r in rb if r.level == p.b.label]
        diffs += compare_level(p.label, a, b)
    return Comparison(tuple(diffs), (), apart_s=apart_s, between=between)


def between_line(c: Comparison) -> str | None:
    """Which was slower between the runs, the machine or the server, by their canaries."""
    if c.between is None:
        return None
    return f"B against A, the canaries at rest: {verdict_words(c.between)}"


def _num(q: str, x: float) -> str:
    return f"{x * NAMES[q][2]:.4g}"


def _signed(q: str, x: float) -> str:
    return f"{x * NAMES[q][2]:+.3g}"


def change_text(q: QuantityDiff) -> str:
    """The value's own change, B / A - 1, signed ("-45.8 %": B is 45.8 % lower); "-" where A
    is 0. Never the gate's slower_by, whose sign flips for throughput."""
    return "-" if q.relative is None else f"{q.relative * 100:+.1f} %"


def gate_line(q: QuantityDiff, threshold: float) -> str:
    """--fail-if-slower's reason for one quantity: its signed change and why it is slower."""
    why = "more time is slower" if q.lower_is_better else "fewer tok/s is slower"
    return (
        f"slower: {q.level} {q.quantity} {change_text(q)} (B / A - 1; {why}) beyond noise "
        f"(--fail-if-slower {threshold * 100:.1f} %)"
    )


def verdict_rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    """One row per (level, quantity): A, B, B - A [95 % interval], relative, verdict."""
    head = ["level", "quantity", "A", "B", "B - A [95 % interval]", "B / A - 1", "verdict"]
    rows, last = [], ""
    for q in c.diffs:
        name, unit, _ = NAMES[q.quantity]
        lo, hi = q.ci95
        rel = change_text(q)
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
        if (unpaired := unpaired_line(c)) is not None:
            con.print(unpaired, highlight=False, markup=False)
        if (between := between_line(c)) is not None:
            con.print(between, highlight=False, markup=False)
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


def _gated(c: Comparison) -> list[QuantityDiff]:
    """The quantities with a smallest detectable change, the gated ones (a thin percentile
    is not gated) where there are any."""
    known = [q for q in c.diffs if q.smallest_detectable is not None]
    return [q for q in known if not q.thin] or known


def least_sensitive(c: Comparison) -> QuantityDiff | None:
    """The quantity whose smallest detectable change is the largest (the one that could
    see least), over the gated ones (thin percentiles are not), else over all."""
    return max(_gated(c), key=lambda q: q.smallest_detectable or 0.0, default=None)


def _where(q: QuantityDiff) -> str:
    return f"{(q.smallest_detectable or 0.0) * 100:.1f} % at {q.level} {NAMES[q.quantity][0]}"


def _ago(seconds: float) -> str:
    s = abs(seconds)
    if s < 90:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h" if s < 48 * 3600 else f"{s / 86400:.1f} days"


def unpaired_line(c: Comparison) -> str | None:
    """Under the table of two separate runs: that they are unpaired, the smallest change
    they could have found (the largest over the gated quantities, and the best one), and
    the paired command. None for a paired comparison or one without verdicts."""
    worst = least_sensitive(c)
    if c.paired or worst is None:
        return None
    best = min(_gated(c), key=lambda q: q.smallest_detectable or 0.0)
    when = "at different times" if c.apart_s is None else f"{_ago(c.apart_s)} apart"
    return (
        f"unpaired: A and B ran {when}, so the machine's drift is in the difference; this "
        f"comparison could not have detected a change smaller than {_where(worst)} (its "
        f"least sensitive quantity; {_where(best)} at best; per quantity, the larger of the "
        f"two runs' repeat spreads and the difference's interval half-width, in --json); "
        f"for a paired run: {PAIRED_COMMAND}"
    )


def comparison_json(c: Comparison) -> dict[str, object]:
    """`report A B --json`'s comparison: each quantity with its verdict, difference, interval
    and smallest detectable change; whether the runs were paired, how far apart, the
    smallest change the comparison could have found (and where), and the line that says so."""
    worst = least_sensitive(c)
    return {
        "quantities": [q.to_json() for q in c.diffs],
        "notes": list(c.notes),
        "rule": RULE,
        "paired": c.paired,
        "apart_s": c.apart_s,
        "smallest_detectable_change": None if worst is None else worst.smallest_detectable,
        "smallest_detectable_change_at": None
        if worst is None
        else {"level": worst.level, "quantity": worst.quantity},
        "unpaired_note": unpaired_line(c),
        "paired_command": None if c.paired else PAIRED_COMMAND,
        "machine_between": None if c.between is None else c.between.to_json(),
        "machine_between_note": between_line(c),
    }
