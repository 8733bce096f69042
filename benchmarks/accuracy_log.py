"""The run-by-run log of `predict_accuracy.py`: one JSON file per run, read and written here.

    uv run python benchmarks/accuracy_log.py results/accuracy-N/accuracy.json   # log a run
    uv run python benchmarks/accuracy_log.py --list                             # the counts

Each run is `benchmarks/results/predict_accuracy/run-NN.json` (a `RunRecord`): when, which
commit, the machine, per shape and quantity the predicted and measured figure (ms for
times, requests/s for goodput), the error (predicted - measured) / measured and whether it
is within its target, the same for the server measured again (`--again`), the max-load
answers, and the counts per target. Runs 1-28 were transcribed from the prose log that
docs/predict-accuracy.md was until issue 38 (git history keeps that prose); a figure the
log did not give is null there. docs/predict-accuracy.md states the latest run and the
method; this folder is the history.
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
class Quantity:
    """One quantity of one shape: predicted (or measured again) against measured."""

    name: str  # a key of QUANTITIES
    predicted: float | None
    measured: float | None
    error: float | None  # (predicted - measured) / measured; None where it has none
    within_target: bool | None  # None: the transcribed log rounded it onto the target's edge


@dataclasses.dataclass(frozen=True, slots=True)
class ShapeResult:
    """One shape of the suite; `again` scores the second measurement against the first."""

    shape: str
    quantities: tuple[Quantity, ...]
    again: tuple[Quantity, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class MaxLoad:
    """`--find-max-load concurrency` within one SLO: streams predicted, searched, again."""

    slo: str
    predicted: float | None
    measured: float | None
    again: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Counts:
    """How many shapes met each target, of `shapes`; max-load answers equal, of `slos`."""

    shapes: int
    tpot_p50: int
    ttft_p50: int
    ttft_p99: int
    goodput: int
    slos: int = 0
    max_load_equal: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class RunRecord:
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


def within(name: str, error: float | None, predicted: float | None, measured: float | None) -> bool:
    """The target's verdict: |error| within the quantity's limit; goodput also when both are 0;
    a quantity neither side has (one-token replies have no TPOT) counts as within."""
    if predicted is None and measured is None:
        return True
    if name.startswith("goodput") and not predicted and not measured:
        return True
    return error is not None and abs(error) <= QUANTITIES[name][2]


def counts_of(shapes: Sequence[ShapeResult], again: bool = False) -> dict[str, int]:
    """Shapes within each target, from the per-quantity verdicts (None counts as not within)."""
    out: dict[str, int] = {}
    for name in QUANTITIES:
        qs = [q for s in shapes for q in (s.again if again else s.quantities) if q.name == name]
        out[name] = sum(1 for q in qs if q.within_target)
    return out


def _quantities(row: Mapping[str, object]) -> tuple[Quantity, ...]:
    out = []
    for name, (key, factor, _) in QUANTITIES.items():
        cell = row.get(key)
        if not isinstance(cell, Mapping):
            continue
        p, m, e = (_num(cell.get(k)) for k in ("predicted", "measured", "error"))
        p, m = (None if x is None else x * factor for x in (p, m))
        out.append(Quantity(name, p, m, e, within(name, e, p, m)))
    return tuple(out)


def _num(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _counts(shapes: Sequence[ShapeResult], loads: Sequence[MaxLoad], again: bool) -> Counts:
    c = counts_of(shapes, again)
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
    return dataclasses.asdict(record)


def from_json(obj: Mapping[str, object]) -> RunRecord:
    """A record from its file's object; a missing field, a wrong type or another schema is a
    ValueError naming it."""
    if obj.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"schema_version {obj.get('schema_version')!r}, expected {SCHEMA_VERSION}")
    try:
        shapes = tuple(
            ShapeResult(_str(s["shape"]), _quants(s["quantities"]), _quants(s["again"]))
            for s in _dicts(obj["shapes"])
        )
        loads = tuple(
            MaxLoad(_str(m["slo"]), _opt(m["predicted"]), _opt(m["measured"]), _opt(m["again"]))
            for m in _dicts(obj["max_load"])
        )
        commit = obj["commit"]
        return RunRecord(
            run=_int(obj["run"]),
            date=_str(obj["date"]),
            commit=None if commit is None else _str(commit),
            machine=_str(obj["machine"]),
            note=_str(obj["note"]),
            shapes=shapes,
            max_load=loads,
            counts=_counts_of_json(obj["counts"]),
            again_counts=_counts_of_json(obj["again_counts"]),
        )
    except (KeyError, TypeError) as e:
        raise ValueError(f"not a run record: {e}") from e


def _quants(x: object) -> tuple[Quantity, ...]:
    return tuple(
        Quantity(
            _str(q["name"]),
            _opt(q["predicted"]),
            _opt(q["measured"]),
            _opt(q["error"]),
            None if q["within_target"] is None else _bool(q["within_target"]),
        )
        for q in _dicts(x)
    )


def _counts_of_json(x: object) -> Counts | None:
    if x is None:
        return None
    if not isinstance(x, dict):
        raise TypeError(f"counts: expected an object, got {x!r}")
    keys = ("shapes", "tpot_p50", "ttft_p50", "ttft_p99", "goodput", "slos", "max_load_equal")
    return Counts(*(_int(x[k]) for k in keys))


def _dicts(x: object) -> list[dict[str, object]]:
    if not isinstance(x, list) or not all(isinstance(d, dict) for d in x):
        raise TypeError(f"expected a list of objects, got {x!r}")
    return x


def _str(x: object) -> str:
    if not isinstance(x, str):
        raise TypeError(f"expected a string, got {x!r}")
    return x


def _int(x: object) -> int:
    if not isinstance(x, int) or isinstance(x, bool):
        raise TypeError(f"expected an integer, got {x!r}")
    return x


def _bool(x: object) -> bool:
    if not isinstance(x, bool):
        raise TypeError(f"expected true or false, got {x!r}")
    return x


def _opt(x: object) -> float | None:
    if x is not None and _num(x) is None:
        raise TypeError(f"expected a number or null, got {x!r}")
    return _num(x)


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
            print(f"run {r.run:2d}  {r.date:16}  {r.commit or '-':8}  {got}{eq}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
