"""A run folder holds one run: claiming one, and reading one back.

Claiming (`claim_run_folder`, called once a command has validated its inputs) refuses a
folder that already holds a run (exit 2) unless the user asked to `--overwrite` it (the old
run's files are removed first) or to `--append-run` (the new run goes into the next free
`run-N/` sub-folder). Used as a context manager it removes a folder it created if the run
fails before writing into it, so a refused or broken run leaves nothing behind.

Reading back: summary.json is checked by reading it into the typed `RunSummary` (summary.py
is the one schema; jsonrecord checks each value against its annotation and names the first
that does not fit). A run killed hard (kill -9, power) keeps every completed request in
records.jsonl (one flushed line each) but its summary.json covers only the levels that
finished, or is missing. `load_summary` rebuilds the missing levels from the records, marks
them interrupted, and says so in a warning, so a report of a partial run shows exactly the
requests that completed and names what is missing (server and floor facts).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.errors import ConfigError, InferlabError, literal
from inferlab.jsonrecord import SchemaError
from inferlab.vocab import LevelKind

if TYPE_CHECKING:
    from inferlab.records import RequestRecord
    from inferlab.summary import RunSummary


# Any of these in a folder means a run lives there.
RUN_MARKERS = ("records.jsonl", "summary.json", "watch.jsonl", "server_metrics.jsonl")
MAX_SUBRUNS = 10_000


class RunFolderError(ConfigError):
    """The run folder (--out) names a file, or a folder that already holds a run."""


def default_out() -> Path:
    """Where a run goes without --out: results/run-<date>-<time> under the current folder."""
    return Path("results") / time.strftime("run-%Y%m%d-%H%M%S")


def holds_run(folder: Path) -> bool:
    return folder.is_dir() and any((folder / m).exists() for m in RUN_MARKERS)


def _next_subrun(folder: Path) -> Path:
    for n in range(1, MAX_SUBRUNS + 1):
        candidate = folder / f"run-{n}"
        if not candidate.exists():
            return candidate
    raise RunFolderError(
        f"{literal(str(folder))} already holds {MAX_SUBRUNS} sub-runs; choose another {{out_dir}}"
    )


def _clear_run(folder: Path) -> None:
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def resolve_run_folder(out: Path, overwrite: bool = False, append_run: bool = False) -> Path:
    """The folder this run will write into; refuses to mix runs (nothing is created here)."""
    if out.exists() and not out.is_dir():
        raise RunFolderError(
            f"{{out_dir}} {literal(str(out))} is a file; give a folder (it is created if missing)"
        )
    if overwrite and append_run:
        raise RunFolderError("give {overwrite} or {append_run}, not both")
    if not holds_run(out):
        return out
    if append_run:
        return _next_subrun(out)
    if overwrite:
        return out
    raise RunFolderError(
        f"{{out_dir}} {literal(str(out))} already holds a run; add {{overwrite}} to replace it, "
        "{append_run} to add this run beside it (in a run-N/ sub-folder), or choose another folder"
    )


@contextlib.contextmanager
def claim_run_folder(
    out: Path, overwrite: bool = False, append_run: bool = False
) -> Iterator[Path]:
    """Create (or clear, with overwrite) the run folder; remove it again if the run dies empty."""
    folder = resolve_run_folder(out, overwrite, append_run)
    created = not folder.exists()
    # The outermost folder this claim creates (e.g. results/ for results/run-...), so a
    # refused run removes every empty folder it made, not just the last one.
    top = folder
    while not top.parent.exists():
        top = top.parent
    if not created and overwrite and holds_run(folder):
        _clear_run(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # a file on the way (--out FILE/x), a read-only or virtual place
        raise RunFolderError(
            f"{{out_dir}} {literal(str(out))}: cannot create the folder "
            f"({literal(str(e.strerror or e))}); give a writable folder"
        ) from e
    try:
        yield folder
    except BaseException:
        if created:
            _remove_empty(folder, top)
        raise


def _remove_empty(folder: Path, top: Path) -> None:
    """Remove `folder` and its parents up to `top` while they are empty."""
    d = folder
    while d.is_dir() and not any(d.iterdir()):
        d.rmdir()
        if d == top:
            break
        d = d.parent


def result_folder(out: Path | None, stem: str, result_name: str, overwrite: bool) -> Path:
    """--out for a verb that writes one result file (engine-bench, profile): the given
    folder or results/<stem>-<time>; a file, or a folder already holding the result (unless
    --overwrite), is refused. Created when the result is written, not here."""
    folder = out or Path("results") / time.strftime(f"{stem}-%Y%m%d-%H%M%S")
    if folder.exists() and not folder.is_dir():
        raise RunFolderError(
            f"{{out_dir}} {literal(str(folder))} is a file; "
            "give a folder (it is created if missing)"
        )
    if (folder / result_name).exists() and not overwrite:
        raise RunFolderError(
            f"{{out_dir}} {literal(str(folder))} already holds {result_name}; add {{overwrite}} "
            "or choose another folder"
        )
    return folder


class SummaryShapeError(InferlabError):
    """A summary.json that is not what bench, demo or simulate write."""


def _is_num(v: object) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or (
        isinstance(v, float) and math.isfinite(v)
    )


def typed_summary(s: object) -> RunSummary:
    """A parsed summary read into RunSummary (the one schema); SchemaError names the key."""
    from inferlab.summary import RunSummary

    return RunSummary.from_json(s)


def read_summary(path: Path) -> RunSummary:
    """summary.json read and checked; one line naming the file when it is not a summary."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise SummaryShapeError(f"{path}: not a text file (byte {e.start} is not UTF-8)") from e
    except IsADirectoryError as e:
        raise SummaryShapeError(f"{path}: is a folder, expected summary.json") from e
    except OSError as e:
        raise SummaryShapeError(f"{path}: cannot read ({e.strerror})") from e
    try:
        summary = json.loads(text)
    except json.JSONDecodeError as e:
        raise SummaryShapeError(f"{path}: damaged JSON ({e.msg} at line {e.lineno})") from e
    except RecursionError as e:
        raise SummaryShapeError(f"{path}: JSON nested too deeply") from e
    try:
        return typed_summary(summary)
    except SchemaError as e:
        raise SummaryShapeError(
            f"{path}: not a summary written by inferlab bench/demo/simulate ({e})"
        ) from e


_LABEL = re.compile(r"(c)=(\d+)|rate=([0-9.eE+-]+)/s")


def _kind_value(label: str) -> tuple[LevelKind, float]:
    m = _LABEL.fullmatch(label)
    if m is None:
        return "concurrency", 0.0
    if m.group(1):
        return "concurrency", float(m.group(2))
    return "rate", float(m.group(3))


_INT_FIELDS = ("request_id", "prompt_tokens_target", "max_tokens", "send_ns", "end_ns")
_OPTIONAL_INT_FIELDS = (
    "scheduled_ns",
    "malformed_events",
    "in_flight_at_send",
    "retries",
    "worker",
)


def _record_problem(d: object) -> str | None:
    if not isinstance(d, dict):
        return "not a JSON object"
    for k in ("level", "phase"):
        if not isinstance(d.get(k), str):
            return f"'{k}' must be text"
    for k in _INT_FIELDS:
        if not isinstance(d.get(k), int) or isinstance(d.get(k), bool):
            return f"'{k}' must be a whole number"
    ev, tok = d.get("event_ns", []), d.get("event_tokens", [])
    if not (isinstance(ev, list) and isinstance(tok, list) and len(ev) == len(tok)):
        return "'event_ns' and 'event_tokens' must be lists of the same length"
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in ev + tok):
        return "'event_ns' and 'event_tokens' must hold whole numbers"
    for k in _OPTIONAL_INT_FIELDS:  # absent in older runs (default 0); present: a number
        if k in d and (not isinstance(d[k], int) or isinstance(d[k], bool)):
            return f"'{k}' must be a whole number"
    for k in ("error", "finish_reason"):
        if d.get(k) is not None and not isinstance(d[k], str):
            return f"'{k}' must be text or null"
    for k in ("http_status", "prompt_tokens", "completion_tokens", "cached_prompt_tokens"):
        if d.get(k) is not None and (not isinstance(d[k], int) or isinstance(d[k], bool)):
            return f"'{k}' must be a whole number or null"
    return None


def read_run_records(path: Path) -> tuple[list[RequestRecord], bool]:
    """Records checked line by line; a torn LAST line (killed mid-write) is skipped and
    reported (second value True); a bad line anywhere else is refused, naming the line."""
    from inferlab.records import RequestRecord

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise SummaryShapeError(f"{path}: not a text file (byte {e.start} is not UTF-8)") from e
    except OSError as e:
        raise SummaryShapeError(f"{path}: cannot read ({e.strerror})") from e
    numbered = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip()]
    out, torn = [], False
    for n, (i, line) in enumerate(numbered):
        try:
            d = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as e:
            if n == len(numbered) - 1:
                torn = True  # the write a hard kill interrupted
                break
            raise SummaryShapeError(f"{path}:{i}: damaged line, not JSON") from e
        problem = _record_problem(d)
        if problem:
            raise SummaryShapeError(f"{path}:{i}: not a request record ({problem})")
        out.append(RequestRecord.from_json(d))
    return out, torn


def _skeleton(records: list[RequestRecord]) -> RunSummary:
    """What a summary can say when the run was killed before writing one."""
    from inferlab.summary import SCHEMA_VERSION, RunSummary, ServerBlock, Workload

    first = records[0] if records else None
    return RunSummary(
        schema_version=SCHEMA_VERSION,
        tool="inferlab (rebuilt from records.jsonl)",
        command=(),
        started_at_unix_s=0.0,
        interrupted=True,
        server=ServerBlock(url=None, kind=None, model=None),
        workload=Workload(
            prompt_tokens=first.prompt_tokens_target if first else 0,
            output_tokens=first.max_tokens if first else 0,
            requests_per_level=sum(1 for r in records if r.phase == "measure"),
        ),
        floor=None,
        levels=(),
        warnings=(),
    )


def load_summary(folder: Path) -> RunSummary:
    """summary.json, completed by levels rebuilt from records.jsonl that it does not cover."""
    from inferlab.metrics.checks import warning
    from inferlab.metrics.level_summary import summarize_level

    if not folder.is_dir():
        what = "no such folder" if not folder.exists() else "a file, not a run folder"
        raise SummaryShapeError(f"{folder}: {what} (give the folder bench, demo or simulate made)")
    summary_path, records_path = folder / "summary.json", folder / "records.jsonl"
    if not summary_path.exists() and not records_path.exists():
        raise SummaryShapeError(
            f"{folder}: no summary.json or records.jsonl here (is it a run folder from bench "
            "or demo?)"
        )
    records = read_run_records(records_path)[0] if records_path.exists() else []
    summary = read_summary(summary_path) if summary_path.exists() else _skeleton(records)
    notes: list[str] = []
    if not summary_path.exists():
        notes.append(
            "no summary.json (the run was killed): levels rebuilt from records.jsonl; server, "
            "floor and client facts are missing"
        )
    known = {lv.label for lv in summary.levels}
    labels = list(dict.fromkeys(r.level for r in records if r.level not in known))
    factor = summary.workload.rest.get("stall_factor", 5.0)
    levels = list(summary.levels)
    for label in labels:
        kind, value = _kind_value(label)
        mine = [r for r in records if r.level == label]
        lv = summarize_level(label, kind, value, mine, factor if _is_num(factor) else 5.0)
        levels.append(replace(lv, interrupted=True))
        if summary_path.exists():
            notes.append(f"level {label} was cut short: rebuilt from {len(mine)} records")
    if not (labels or notes):
        return summary
    warns = [*summary.warnings, *(warning("partial_run", "run", "warning", n) for n in notes)]
    return replace(summary, levels=tuple(levels), warnings=tuple(warns), interrupted=True)
