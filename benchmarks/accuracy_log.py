"""The run-by-run log of `predict_accuracy.py`: one JSON file per run, read and written here.

    uv run python benchmarks/accuracy_log.py results/accuracy-N/accuracy.json   # log a run
    uv run python benchmarks/accuracy_log.py --list                             # the counts

Each run is `benchmarks/results/predict_accuracy/run-NN.json` (a `RunRecord`): when, which
commit, the machine, per shape and quantity the predicted and measured figure (ms for
times, requests/s for goodput), the error (predicted - measured) / measured and whether it
is within its target, the same for the server measured again (`--again`), the max-load
answers, and the counts per target. From issue 39 a quantity also keeps the measurement's
95 % interval (`ci95`, same unit) and its grade (`within_target`, `within_noise`, `miss`:
metrics/scoring.py), and a run the counts that take the interval as well
(`counts_with_noise`); a file written before them reads as it always did. Runs 1-28 were
transcribed from the prose log that docs/predict-accuracy.md was until issue 38 (git
history keeps that prose); a figure the log did not give is null there.
docs/predict-accuracy.md states the latest run and the method; this folder is the history.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from inferlab.jsonrecord import JsonRecord, SchemaError, optional
from inferlab.metrics import scoring
from inferlab.summary import Grade

LOG_DIR = Path(__file__).parent / "results" / "predict_accuracy"
SCHEMA_VERSION = 1

#: quantity -> (key in accuracy.json, factor to this log's unit, target as a fraction)
QUANTITIES: dict[str, tuple[str, float, float]] = {
    "tpot_p50_ms": ("tpot_p50_s", 1e3, 0.10),
    "ttft_p50_ms": ("ttft_p50_s", 1e3, 0.15),
    "ttft_p99_ms": ("ttft_p99_s", 1e3, 0.25),
    "goodput_requests_per_s": ("goodput_requests_per_s", 1.0, 0.10),
}


@dataclasses.dataclass(frozen=True, slots=True)
class Quantity(JsonRecord):
    """One quantity of one shape: predicted (or measured again) against measured."""

    name: str  # a key of QUANTITIES
    predicted: float | None
    measured: float | None
    error: float | None  # (predicted - measured) / measured; None where it has none
    within_target: bool | None  # None: the transcribed log rounded it onto the target's edge
    ci95: tuple[float, ...] | None = optional()  # the measurement's 95 % interval
    grade: Grade | None = optional()  # within_target / within_noise / miss (issue 39 on)


@dataclasses.dataclass(frozen=True, slots=True)
class ShapeResult(JsonRecord):
    """One shape of the suite; `again` scores the second measurement against the first."""

    shape: str
    quantities: tuple[Quantity, ...]
    again: tuple[Quantity, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class MaxLoad(JsonRecord):
    """`--find-max-load concurrency` within one SLO: streams predicted, searched, again."""

    slo: str
    predicted: float | None
    measured: float | None
    again: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Counts(JsonRecord):
    """How many shapes met each target, of `shapes`; max-load answers equal, of `slos`."""

    shapes: int
    tpot_p50: int
    ttft_p50: int
    ttft_p99: int
    goodput: int
    slos: int = 0
    max_load_equal: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Calibration(JsonRecord):
    """--again --repeat N: of `pairs` (shape, quantity) pairs, on how many the second
    measurement lay inside the first's 95 % interval, and the intervals' half-widths
    (relative to the value)."""

    pairs: int
    covered: int
    half_width_median: float
    half_width_max: float
    # Of them, the pairs whose interval claims 95 % (its upper end bounded by enough
    # requests: not summary.Interval.tail_undersampled); absent in runs before run 34.
    bounded_pairs: int | None = optional()
    bounded_covered: int | None = optional()
    # Which interval: "pi95" (where the next run lands), "ci95" (the long-run value), or
    # "pi95 and ci95" (pi95 where the first had one); absent: ci95 (every run before pi95).
    interval: str | None = optional()
    # The same pairs against the first's ci95 alone, where `interval` is pi95 (kept beside)
    ci95_pairs: int | None = optional()
    ci95_covered: int | None = optional()


@dataclasses.dataclass(frozen=True, slots=True)
class RunRecord(JsonRecord):
    """One run of the benchmark, as the log keeps it."""

    run: int
    date: str  # YYYY-MM-DD (UTC), or a time too where known
    commit: str | None
    machine: str
    note: str
    shapes: tuple[ShapeResult, ...]
    max_load: tuple[MaxLoad, ...]
    counts: Counts | None
    again_counts: Counts | None = None
    schema_version: int = SCHEMA_VERSION
    # Shapes that count as predicted within the target or the measured interval (graded runs)
    counts_with_noise: Counts | None = optional()
    again_counts_with_noise: Counts | None = optional()
    calibration: Calibration | None = optional()  # runs with --again --repeat N
    engine: str | None = optional()  # "vllm" or "llamacpp" (runs before vLLM: llama-server)


def within(name: str, error: float | None, predicted: float | None, measured: float | None) -> bool:
    """The target's verdict: |error| within the quantity's limit; goodput also when both are 0;
    a quantity neither side has (one-token replies have no TPOT) counts as within."""
    if predicted is None and measured is None:
        return True
    if name.startswith("goodput") and not predicted and not measured:
        return True
    return error is not None and abs(error) <= QUANTITIES[name][2]


def counts_of(
    shapes: Sequence[ShapeResult], again: bool = False, noise: bool = False
) -> dict[str, int]:
    """Shapes within each target, from the per-quantity verdicts (None counts as not within);
    with `noise`, within the target or a gradable measured interval (within_target or
    within_noise: never a miss or an ungradable one)."""
    out: dict[str, int] = {}
    for name in QUANTITIES:
        qs = [q for s in shapes for q in (s.again if again else s.quantities) if q.name == name]
        out[name] = sum(
            1 for q in qs if (q.grade in scoring.PREDICTED if noise else q.within_target)
        )
    return out


def _quantities(row: Mapping[str, object]) -> tuple[Quantity, ...]:
    out = []
    for name, (key, factor, _) in QUANTITIES.items():
        cell = row.get(key)
        if not isinstance(cell, Mapping):
            continue
        p, m, e = (_num(cell.get(k)) for k in ("predicted", "measured", "error"))
        raw = cell.get("ci95")
        ci = tuple(float(x) for x in raw) if isinstance(raw, list) and len(raw) == 2 else None
        tail = cell.get("tail_undersampled") is True
        grade = _grade(key, p, m, e, ci, tail) if "grade" in cell else None
        p, m = (None if x is None else x * factor for x in (p, m))
        ci = None if ci is None else tuple(x * factor for x in ci)
        out.append(Quantity(name, p, m, e, within(name, e, p, m), ci, grade))
    return tuple(out)


def _grade(
    key: str,
    p: float | None,
    m: float | None,
    e: float | None,
    ci: Sequence[float] | None,
    tail: bool = False,
) -> Grade | None:
    """The cell's grade, from its numbers as metrics/scoring.py grades them (None: not
    judged; `tail`: its interval has no upper end)."""
    if not scoring.judged(key, p, m):
        return None
    return scoring.grade(p, m, e, ci, scoring.TARGETS[key], tail)


def _num(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _counts(
    shapes: Sequence[ShapeResult], loads: Sequence[MaxLoad], again: bool, noise: bool = False
) -> Counts:
    c = counts_of(shapes, again, noise)
    equal = [(m.again if again else m.predicted) == m.measured for m in loads]
    n = sum(1 for s in shapes if (s.again if again else s.quantities))
    return Counts(
        shapes=n,
        tpot_p50=c["tpot_p50_ms"],
        ttft_p50=c["ttft_p50_ms"],
        ttft_p99=c["ttft_p99_ms"],
        goodput=c["goodput_requests_per_s"],
        slos=len(loads),
        max_load_equal=sum(equal),
    )


def record_of(accuracy: Mapping[str, object], run: int, commit: str | None, note: str) -> RunRecord:
    """A run's record from the object `predict_accuracy.py` writes as accuracy.json."""
    rows = accuracy.get("shapes")
    rows = rows if isinstance(rows, Mapping) else {}
    shapes = tuple(
        ShapeResult(str(name), _quantities(row), _quantities(_mapping(row.get("again"))))
        for name, row in rows.items()
        if isinstance(row, Mapping)
    )
    raw = accuracy.get("max_load")
    loads = tuple(
        MaxLoad(
            str(r.get("slo")),
            _num(r.get("predicted")),
            _num(r.get("measured")),
            _num(r.get("again")),
        )
        for r in (raw if isinstance(raw, list) else [])
        if isinstance(r, Mapping)
    )
    when = _num(accuracy.get("date_unix_s")) or time.time()
    again = any(s.again for s in shapes)
    graded = any(q.grade for s in shapes for q in s.quantities)  # issue 39's rows on
    return RunRecord(
        run=run,
        date=time.strftime("%Y-%m-%d %H:%M", time.gmtime(when)),
        commit=commit,
        machine=_machine(accuracy),
        note=note,
        shapes=shapes,
        max_load=loads,
        counts=_counts(shapes, loads, again=False),
        again_counts=_counts(shapes, loads, again=True) if again else None,
        counts_with_noise=_counts(shapes, loads, False, noise=True) if graded else None,
        again_counts_with_noise=_counts(shapes, loads, True, noise=True)
        if graded and again
        else None,
        calibration=_calibration(_mapping(accuracy.get("calibration"))),
        engine=str(accuracy["engine"]) if isinstance(accuracy.get("engine"), str) else None,
    )


def _calibration(raw: Mapping[str, object]) -> Calibration | None:
    pairs, covered = _num(raw.get("pairs")), _num(raw.get("covered"))
    median, widest = _num(raw.get("half_width_median")), _num(raw.get("half_width_max"))
    if pairs is None or covered is None or median is None or widest is None:
        return None
    bp, bc = _num(raw.get("bounded_pairs")), _num(raw.get("bounded_covered"))
    both = bp is not None and bc is not None
    return Calibration(
        int(pairs),
        int(covered),
        median,
        widest,
        int(bp) if both and bp is not None else None,
        int(bc) if both and bc is not None else None,
        interval=str(raw["interval"]) if isinstance(raw.get("interval"), str) else None,
        ci95_pairs=int(cp) if (cp := _num(raw.get("ci95_pairs"))) is not None else None,
        ci95_covered=int(cc) if (cc := _num(raw.get("ci95_covered"))) is not None else None,
    )


def _mapping(x: object) -> Mapping[str, object]:
    return x if isinstance(x, Mapping) else {}


def _machine(accuracy: Mapping[str, object]) -> str:
    def load(k: str) -> str:
        v = accuracy.get(k)
        return " ".join(str(x) for x in v) if isinstance(v, list) else "?"

    return (
        f"{accuracy.get('cores', '?')} cores; load average before {load('load_before')}, "
        f"after {load('load_after')}; profile {_num(accuracy.get('profile_wall_s')) or 0:.0f} s "
        f"of probes, its decode rounds spread +-{_num(accuracy.get('speed_spread')) or 0:.0%}"
    )


def to_json(record: RunRecord) -> dict[str, object]:
    """The record as the file holds it (field names as the dataclasses name them)."""
    return record.to_json()


def from_json(obj: Mapping[str, object]) -> RunRecord:
    """A record from its file's object, every value checked against the dataclasses'
    annotations (inferlab.jsonrecord); another schema, a missing field or a wrong type is a
    ValueError naming it."""
    if obj.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"schema_version {obj.get('schema_version')!r}, expected {SCHEMA_VERSION}")
    try:
        return RunRecord.from_json(dict(obj))
    except SchemaError as e:
        raise ValueError(f"not a run record: {e}") from e


def read_runs(folder: Path = LOG_DIR) -> list[RunRecord]:
    """Every run in the folder, in run order."""
    runs = [from_json(json.loads(p.read_text(encoding="utf-8"))) for p in folder.glob("run-*.json")]
    return sorted(runs, key=lambda r: r.run)


def write_run(record: RunRecord, folder: Path = LOG_DIR) -> Path:
    """Write one run's file (run-NN.json); an existing one is refused, not replaced."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"run-{record.run:02d}.json"
    with path.open("x", encoding="utf-8") as f:
        f.write(json.dumps(to_json(record), indent=1) + "\n")
    return path


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=Path(__file__).parent,
        )
    except OSError:
        return None
    return out.stdout.strip() or None


def record_run(
    accuracy: Mapping[str, object], folder: Path = LOG_DIR, note: str = ""
) -> Path | None:
    """Append a finished run (the object written as accuracy.json) to the log, as the next run,
    and return its file. A run against the scripted fake (`--fake`) checks the harness, not a
    prediction of a real server: it is not logged (None)."""
    argv = accuracy.get("argv")
    argv = [str(x) for x in argv] if isinstance(argv, list) else []
    if "--fake" in argv:
        return None
    note = note or f"argv: {' '.join(argv)}"
    last = max((r.run for r in read_runs(folder)), default=0) if folder.is_dir() else 0
    return write_run(record_of(accuracy, last + 1, _commit(), note), folder)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("accuracy", nargs="?", type=Path, help="a run's accuracy.json to log")
    ap.add_argument("--note", default="", help="a line kept with the run")
    ap.add_argument("--list", action="store_true", help="print every run's counts")
    a = ap.parse_args(argv)
    if a.accuracy:
        print(record_run(json.loads(a.accuracy.read_text(encoding="utf-8")), note=a.note))
    if a.list or not a.accuracy:
        for r in read_runs():
            c = r.counts
            got = (
                f"{c.tpot_p50} / {c.ttft_p50} / {c.ttft_p99} / {c.goodput} of {c.shapes}"
                if c
                else "-"
            )
            eq = f"; max load {c.max_load_equal} of {c.slos}" if c and c.slos else ""
            n = r.counts_with_noise
            noise = (
                f"; with noise {n.tpot_p50} / {n.ttft_p50} / {n.ttft_p99} / {n.goodput}"
                if n
                else ""
            )
            engine = f"  [{r.engine}]" if r.engine and r.engine != "llamacpp" else ""
            cal = (
                f"; calibration {r.calibration.covered}/{r.calibration.pairs}"
                f" ({r.calibration.interval or 'ci95'})"
                if r.calibration
                else ""
            )
            print(
                f"run {r.run:2d}  {r.date:16}  {r.commit or '-':8}  {got}{eq}{noise}{cal}{engine}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
