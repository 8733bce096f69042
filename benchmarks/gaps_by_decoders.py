"""Where a held-out shape's TPOT miss comes from: its inter-token gaps, measured and
predicted, grouped by how many streams were decoding when each gap ran.

Reads a `benchmarks/predict_accuracy.py --out DIR` folder (each shape's `measured/` and
`predicted/` records.jsonl) and prints per shape and decoder count: how many gaps each side
spent there (per repeat, so the two sides compare) and their median and mean. Two kinds of
miss read apart here:

- the same number of decoders priced differently (the medians differ): the step model;
- the same prices, but the measurement spent more of its time at high counts (the counts
  differ): overlap that fed on itself, a small per-step excess amplified by the queue.

The mean over the median says how much of the time went to prompt steps landing between
two tokens (stalls).

    uv run python benchmarks/gaps_by_decoders.py DIR [--shape poisson-50%] ...
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from inferlab.records import RequestRecord, read_records


@dataclass(frozen=True, slots=True)
class Gaps:
    """One side's gaps (ms) by decoders, and over how many repeats they were measured."""

    by_decoders: dict[int, list[float]]
    repeats: int


def decoding_at(spans: list[tuple[int, int]], t_ns: float) -> int:
    """How many streams were between their first and last token at `t_ns`."""
    return sum(1 for s, e in spans if s <= t_ns <= e)


def gaps_of(records: list[RequestRecord]) -> Gaps:
    """Every measured request's gaps between tokens, keyed by the streams decoding at the
    gap's midpoint (counted within the request's own repeat)."""
    out: dict[int, list[float]] = defaultdict(list)
    done = [r for r in records if r.phase == "measure" and len(r.event_ns) > 1]
    repeats = sorted({r.repeat for r in done})
    for k in repeats:
        mine = [r for r in done if r.repeat == k]
        spans = [(r.event_ns[0], r.event_ns[-1]) for r in mine]
        for r in mine:
            for a, b in zip(r.event_ns, r.event_ns[1:], strict=False):
                out[decoding_at(spans, (a + b) / 2)].append((b - a) / 1e6)
    return Gaps(dict(out), max(1, len(repeats)))


def cell(gaps: list[float], repeats: int) -> str:
    """`count/repeat median mean` of one side's gaps, or '-'."""
    if not gaps:
        return f"{'-':>22}"
    n = len(gaps) / repeats
    return f"{n:6.0f} {statistics.median(gaps):7.1f} {statistics.fmean(gaps):7.1f}"


def print_shape(name: str, measured: Gaps, predicted: Gaps) -> None:
    print(f"{name}: gaps per repeat, median ms, mean ms (measured | predicted)")
    for d in sorted(set(measured.by_decoders) | set(predicted.by_decoders)):
        m = cell(measured.by_decoders.get(d, []), measured.repeats)
        p = cell(predicted.by_decoders.get(d, []), predicted.repeats)
        print(f"  {d:>3} decoding  {m} | {p}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="a predict_accuracy.py --out folder")
    ap.add_argument("--shape", action="append", help="only these shapes (repeatable)")
    a = ap.parse_args(argv)
    shapes = sorted(p.parent.parent.name for p in a.out.glob("*/measured/records.jsonl"))
    shapes = [s for s in shapes if not a.shape or s in a.shape]
    if not shapes:
        print(f"no shape with measured/records.jsonl under {a.out}", file=sys.stderr)
        return 2
    for s in shapes:
        pred = a.out / s / "predicted" / "records.jsonl"
        measured = gaps_of(read_records(a.out / s / "measured" / "records.jsonl"))
        print_shape(s, measured, gaps_of(read_records(pred) if pred.exists() else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
