"""The trace file formats: detect one from the header or the first object's keys, read its rows.

Four layouts, each one `Layout` record:

    azure     CSV   TIMESTAMP (a date-time), ContextTokens, GeneratedTokens
    generic   CSV   timestamp_s, prompt_tokens, output_tokens  (also as JSONL keys)
    mooncake  JSONL timestamp (ms), input_length, output_length, hash_ids
    simulate  JSONL arrival_s, prompt_tokens, output_tokens   (what `simulate --trace` read)

Every bad value is one InferlabError line naming the file, the row (its 1-based line number in
the file, the CSV header being line 1) and the column. Rows must be sorted by time, except in
the legacy `simulate` layout, which was always sorted on reading and still is.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NoReturn

import numpy as np
import numpy.typing as npt

from inferlab.errors import InferlabError

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
MAX_TOKENS = 10**9  # far above any context; keeps every length inside int64
TraceFormat = Literal["azure", "generic", "mooncake", "simulate"]


@dataclass(frozen=True, slots=True)
class Layout:
    """Where one format keeps a row's time and lengths."""

    format: TraceFormat
    time_col: str
    prompt_col: str
    output_col: str
    seconds_per_unit: float  # the time column's unit (ms for Mooncake); 0 for a date-time
    hash_col: str = ""  # Mooncake's prompt block ids

    @property
    def columns(self) -> tuple[str, ...]:
        cols = (self.time_col, self.prompt_col, self.output_col, self.hash_col)
        return tuple(c for c in cols if c)


AZURE = Layout("azure", "TIMESTAMP", "ContextTokens", "GeneratedTokens", 0.0)
GENERIC = Layout("generic", "timestamp_s", "prompt_tokens", "output_tokens", 1.0)
MOONCAKE = Layout("mooncake", "timestamp", "input_length", "output_length", 1e-3, "hash_ids")
SIMULATE = Layout("simulate", "arrival_s", "prompt_tokens", "output_tokens", 1.0)
CSV_LAYOUTS = (AZURE, GENERIC, SIMULATE)
JSON_LAYOUTS = (MOONCAKE, GENERIC, SIMULATE)
ACCEPTED = (
    "an Azure CSV (TIMESTAMP,ContextTokens,GeneratedTokens), a Mooncake JSONL "
    "(timestamp,input_length,output_length,hash_ids) or a CSV/JSONL with "
    "timestamp_s,prompt_tokens,output_tokens"
)


@dataclass(frozen=True, slots=True, eq=False)
class Rows:
    """A trace's rows as read, times in seconds on the file's own clock."""

    source: str
    format: TraceFormat
    times_s: Floats
    prompt_tokens: Ints
    output_tokens: Ints
    lines: Ints  # each row's 1-based line number in the file
    hash_ids: tuple[tuple[int, ...], ...] | None


class _Rows:
    """Columns being filled, with the checks every format shares."""

    def __init__(self, source: str, layout: Layout) -> None:
        self.source, self.layout = source, layout
        self.times: list[float] = []
        self.prompt: list[int] = []
        self.output: list[int] = []
        self.lines: list[int] = []
        self.hashes: list[tuple[int, ...]] = []

    def fail(self, line: int, column: str, problem: str) -> NoReturn:
        raise InferlabError(f"{self.source}:{line}: column {column}: {problem}")

    def add(self, line: int, time: object, prompt: object, output: object) -> None:
        lay = self.layout
        t = self.time(line, time)
        if self.times and t < self.times[-1] and lay.format != "simulate":
            self.fail(
                line,
                lay.time_col,
                f"{time} is earlier than the row before (line {self.lines[-1]}); "
                "a trace must be sorted by time",
            )
        self.times.append(t)
        self.prompt.append(self.length(line, lay.prompt_col, prompt))
        self.output.append(self.length(line, lay.output_col, output))
        self.lines.append(line)

    def time(self, line: int, value: object) -> float:
        col = self.layout.time_col
        if self.layout.seconds_per_unit == 0:
            try:
                dt = datetime.fromisoformat(str(value).strip())
            except ValueError:
                self.fail(line, col, f"{value!r} is not a date-time like 2023-11-16 18:15:46.68")
            return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
        t = _number(value)
        if t is None or not math.isfinite(t):
            self.fail(line, col, f"{value!r} is not a number")
        if t < 0:
            self.fail(line, col, f"{value!r} is negative; times are 0 or more")
        return t * self.layout.seconds_per_unit

    def length(self, line: int, column: str, value: object) -> int:
        n = _number(value)
        if n is None or not math.isfinite(n) or n != int(n):
            self.fail(line, column, f"{value!r} is not a whole number of tokens")
        if not 1 <= n <= MAX_TOKENS:
            self.fail(line, column, f"{value!r} tokens; a length is 1 to {MAX_TOKENS:,}")
        return int(n)

    def hash_ids(self, line: int, value: object) -> None:
        if not isinstance(value, list) or not all(type(h) is int and h >= 0 for h in value):
            self.fail(line, self.layout.hash_col, "not a list of block ids (whole numbers >= 0)")
        self.hashes.append(tuple(value))

    def done(self) -> Rows:
        if not self.times:
            raise InferlabError(f"{self.source}: the trace has no rows")
        return Rows(
            self.source,
            self.layout.format,
            np.array(self.times, dtype=np.float64),
            np.array(self.prompt, dtype=np.int64),
            np.array(self.output, dtype=np.int64),
            np.array(self.lines, dtype=np.int64),
            tuple(self.hashes) if self.layout.hash_col else None,
        )


def _number(value: object) -> float | None:
    """A JSON number or a CSV cell as a float; None when it is neither (booleans included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def parse_rows(source: str, text: str) -> Rows:
    """Read a whole trace file's text; `source` names it in every error."""
    first = text.lstrip()[:1]
    if not first:
        raise InferlabError(f"{source}: the trace file is empty; write {ACCEPTED}")
    if first == "{":
        return _parse_jsonl(source, text)
    return _parse_csv(source, text)


def _pick(source: str, line: int, names: set[str], layouts: tuple[Layout, ...]) -> Layout:
    """The layout whose columns the header has; else name what is missing from the closest."""
    best = max(layouts, key=lambda lay: len(names & set(lay.columns)))
    missing = [c for c in best.columns if c not in names]
    if not missing:
        return best
    if len(missing) == len(best.columns):
        raise InferlabError(
            f"{source}:{line}: no trace columns (found {', '.join(sorted(names)) or 'none'}); "
            f"write {ACCEPTED}"
        )
    raise InferlabError(
        f"{source}:{line}: missing column {', '.join(missing)} "
        f"(a {best.format} trace has {', '.join(best.columns)})"
    )


def _parse_csv(source: str, text: str) -> Rows:
    reader = csv.reader(io.StringIO(text))
    header = next((cells for cells in reader if "".join(cells).strip()), [])
    names = [cell.strip() for cell in header]
    layout = _pick(source, reader.line_num, set(names), CSV_LAYOUTS)
    idx = [names.index(c) for c in layout.columns]
    lines: list[int] = []
    body: list[list[str]] = []
    for cells in reader:
        if "".join(cells).strip():
            lines.append(reader.line_num)
            body.append(cells)
    if len(body) and min(map(len, body)) > max(idx):
        cols = [[cells[i] for cells in body] for i in idx]
        fast = _fast_rows(source, layout, lines, cols)
        if fast is not None:
            return fast
    rows = _Rows(source, layout)  # slow and exact: finds the first bad cell and names it
    for line, cells in zip(lines, body, strict=True):
        absent = [c for c, i in zip(layout.columns, idx, strict=True) if i >= len(cells)]
        if absent:
            rows.fail(line, absent[0], f"missing (the row has {len(cells)} of {len(names)} cells)")
        rows.add(line, cells[idx[0]], cells[idx[1]], cells[idx[2]])
    return rows.done()


def _parse_jsonl(source: str, text: str) -> Rows:
    numbered = [(n, raw) for n, raw in enumerate(text.split("\n"), 1) if raw and not raw.isspace()]
    lines = [n for n, _ in numbered]
    try:  # one decoder call for the whole file; any doubt falls back to the exact reader
        objs = json.loads("[" + ",".join(raw for _, raw in numbered) + "]")
        if len(objs) == len(lines) and set(map(type, objs)) == {dict}:
            layout = _pick(source, lines[0], set(objs[0]), JSON_LAYOUTS)
            fast = _fast_rows(source, layout, lines, [[o[c] for o in objs] for c in layout.columns])
            if fast is not None:
                return fast
    except (ValueError, KeyError, RecursionError):
        pass
    return _parse_jsonl_exact(source, numbered)


def _parse_jsonl_exact(source: str, numbered: list[tuple[int, str]]) -> Rows:
    rows: _Rows | None = None
    for line, raw in numbered:
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            raise InferlabError(f"{source}:{line}: not a JSON object ({e.msg})") from None
        if not isinstance(obj, dict):
            raise InferlabError(f"{source}:{line}: not a JSON object")
        if rows is None:
            rows = _Rows(source, _pick(source, line, set(obj), JSON_LAYOUTS))
        lay = rows.layout
        absent = [c for c in lay.columns if c not in obj]
        if absent:
            raise InferlabError(f"{source}:{line}: missing column {', '.join(absent)}")
        rows.add(line, obj[lay.time_col], obj[lay.prompt_col], obj[lay.output_col])
        if lay.hash_col:
            rows.hash_ids(line, obj[lay.hash_col])
    if rows is None:
        raise InferlabError(f"{source}: the trace has no rows")
    return rows.done()


def _fast_rows(source: str, layout: Layout, lines: list[int], cols: list[list[Any]]) -> Rows | None:
    """All columns at once with numpy; None when any value is doubtful (the exact reader then
    finds and names it)."""
    times = _fast_times(layout, cols[0])
    prompt, output = _fast_lengths(cols[1]), _fast_lengths(cols[2])
    if times is None or prompt is None or output is None:
        return None
    if layout.format != "simulate" and bool(np.any(np.diff(times) < 0)):
        return None
    hashes = None
    if layout.hash_col:
        hashes = _fast_hashes(cols[3])
        if hashes is None:
            return None
    ints = np.array(lines, dtype=np.int64)
    return Rows(source, layout.format, times, prompt, output, ints, hashes)


def _fast_numbers(raw: list[Any]) -> Floats | None:
    if not set(map(type, raw)) <= {int, float, str}:  # a bool is not a number here
        return None
    try:
        arr = np.array(raw, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        return None
    return arr if bool(np.all(np.isfinite(arr))) else None


def _fast_lengths(raw: list[Any]) -> Ints | None:
    arr = _fast_numbers(raw)
    if arr is None or bool(np.any((arr < 1) | (arr > MAX_TOKENS) | (arr != np.floor(arr)))):
        return None
    return arr.astype(np.int64)


def _fast_times(layout: Layout, raw: list[Any]) -> Floats | None:
    if layout.seconds_per_unit > 0:
        arr = _fast_numbers(raw)
        if arr is None or bool(np.any(arr < 0)):
            return None
        return arr * layout.seconds_per_unit
    if not set(map(type, raw)) <= {str}:
        return None
    cells = [v.strip() for v in raw]
    # numpy also reads "now", "NaT" and zoned times (with a warning): leave those to datetime.
    if not all(len(c) >= 10 and c[:4].isdigit() for c in cells):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            stamps = np.array(cells, dtype="datetime64[us]")
    except (ValueError, Warning):
        return None
    if bool(np.any(np.isnat(stamps))):
        return None
    return stamps.astype(np.int64) / 1e6


def _fast_hashes(raw: list[Any]) -> tuple[tuple[int, ...], ...] | None:
    if not set(map(type, raw)) <= {list}:
        return None
    flat = list(itertools.chain.from_iterable(raw))
    if not set(map(type, flat)) <= {int} or (flat and min(flat) < 0):
        return None
    return tuple(tuple(ids) for ids in raw)
