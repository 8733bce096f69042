"""Reading a run folder back: summary.json checked for shape, and what a killed run left.

A run killed hard (kill -9, power) keeps every completed request in records.jsonl
(one flushed line each) but its summary.json covers only the levels that finished,
or is missing. `load_run` rebuilds the missing levels from the records, marks them
interrupted, and says so in a warning, so a report of a partial run shows exactly
the requests that completed and names what is missing (server and floor facts).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inferlab.errors import InferlabError

if TYPE_CHECKING:
    from inferlab.summary import RunSummary

SCHEMA_VERSION = 1


class SummaryShapeError(InferlabError):
    """A summary.json that is not what bench, demo or simulate write."""


# What each field must hold, by kind; the report and --calibrate read every one of these.
def _is_num(v: Any) -> bool:
    # ints beyond 64 bits would become numpy object arrays downstream (calibrate's fit)
    if isinstance(v, int) and not isinstance(v, bool):
        return abs(v) < 2**63
    return isinstance(v, float) and math.isfinite(v)


def _num_or_null(v: Any) -> bool:
    return v is None or _is_num(v)  # inferlab writes null, never NaN/Infinity


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _text(v: Any) -> bool:
    return isinstance(v, str)


def _stat(v: Any) -> bool:
    keys = ("p50", "p90", "p95", "p99", "p999", "max", "mean")
    return (
        isinstance(v, dict)
        and all(k in v and _num_or_null(v[k]) for k in keys)
        and _count(v.get("n"))
    )


def _texts(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _flat(v: Any) -> bool:
    """An object of plain values (server facts, client host, extra)."""
    return isinstance(v, dict) and all(
        x is None or isinstance(x, str | int | float | bool) for x in v.values()
    )


def _obj(v: Any) -> bool:
    return isinstance(v, dict)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _num(v: Any) -> bool:
    return _is_num(v)


_KINDS = {
    _obj: "an object",
    _bool: "true or false",
    _num: "a finite number",
    _num_or_null: "a number",
    _count: "a count",
    _text: "text",
    _stat: "percentiles p50..p999, max, mean and n",
    _texts: "a list of text",
    _flat: "an object of plain values",
}
_STATS = ("ttft_s", "tpot_s", "e2e_s", "gap_s", "worst_gap_per_request_s", "queue_delay_s")
_COUNTS = (
    "requests_measured", "requests_warmup", "requests_ok", "requests_failed",
    "requests_early_stop", "stall_count", "multi_token_events", "output_tokens",
    "streamed_tokens_mismatch", "malformed_events",
)  # fmt: skip
_NUMS = (
    "stall_threshold_s", "window_s", "output_tokens_per_s_total",
    "output_tokens_per_s_per_user", "mean_active_streams",
)  # fmt: skip
LEVEL_REQUIRED: dict[str, Any] = {
    "label": _text,
    "errors": _texts,
    **dict.fromkeys(_STATS, _stat),
    **dict.fromkeys(_COUNTS, _count),
    **dict.fromkeys(_NUMS, _num),
}
_COMPARE = (
    "concurrency", "rate_per_s", "floor_batch", "floor_context_tokens", "bytes_per_step",
    "flops_per_step", "predicted_step_time_s", "ceiling_tokens_per_s_per_user",
    "predicted_tokens_per_s_total", "measured_step_time_s", "achieved_bandwidth_bytes_per_s",
    "achieved_flops_per_s", "mbu", "mfu", "measured_over_floor", "prompt_tokens_usage_p50",
    "completion_tokens_p50",
)  # fmt: skip
LEVEL_OPTIONAL: dict[str, Any] = {
    **dict.fromkeys(_COMPARE, _num_or_null),
    "client": _flat,
    "predicted_bound": _text,
    **dict.fromkeys(("preemptions", "steps", "injected_requests"), _count),
    "interrupted": _bool,
}
# A level compared with the floor carries all of these (read together, or not at all).
COMPARISON_REQUIRED: dict[str, Any] = {
    "floor_batch": _count,
    "floor_context_tokens": _count,
    "predicted_bound": _text,
    **dict.fromkeys(
        ("bytes_per_step", "flops_per_step", "predicted_step_time_s",
         "ceiling_tokens_per_s_per_user", "predicted_tokens_per_s_total"),
        _num,
    ),
}  # fmt: skip
FLOOR_TEXT = ("model", "model_source", "hardware", "hardware_source")
FLOOR_NUMS = (
    "weight_bytes_resident", "weight_bytes_per_step", "kv_bytes_per_token",
    "bandwidth_bytes_per_s",
)  # fmt: skip
WARNING_TEXT = ("code", "level", "severity", "message")


def _field_problem(
    obj: dict[str, Any], where: str, kinds: dict[str, Any], need: bool
) -> str | None:
    for key, ok in kinds.items():
        if key not in obj:
            if need:
                return f"{where}: no '{key}'"
            continue
        if (need or obj[key] is not None) and not ok(obj[key]):
            return f"{where}: '{key}' must be {_KINDS[ok]}"
    return None


def _level_problem(lv: Any, i: int) -> str | None:
    if not isinstance(lv, dict):
        return f"levels[{i}] is not an object"
    where = f"level {lv['label']}" if isinstance(lv.get("label"), str) else f"levels[{i}]"
    problem = _field_problem(lv, where, LEVEL_REQUIRED, True)
    problem = problem or _field_problem(lv, where, LEVEL_OPTIONAL, False)
    if problem is None and "floor_batch" in lv:
        problem = _field_problem(lv, where, COMPARISON_REQUIRED, True)
    if problem is None and lv.get("predicted_step_time_s") is not None:
        if not _is_num(lv.get("mbu")) or not _is_num(lv.get("bytes_per_step")):
            return f"{where}: a predicted step needs numbers 'mbu' and 'bytes_per_step'"
        if not lv["predicted_step_time_s"] > 0:
            return f"{where}: 'predicted_step_time_s' must be above 0"
    return problem


def _floor_problem(fl: Any) -> str | None:
    if fl is None:
        return None
    if not isinstance(fl, dict) or not all(_is_num(fl.get(k)) and fl[k] >= 0 for k in FLOOR_NUMS):
        return f"'floor' needs numbers {', '.join(FLOOR_NUMS)}"
    if fl["bandwidth_bytes_per_s"] <= 0:
        return "'floor.bandwidth_bytes_per_s' must be above 0"
    peak = fl.get("peak_flops_per_s")
    if peak is not None and not (_num_or_null(peak) and peak > 0):
        return "'floor.peak_flops_per_s' must be a number above 0"
    if not all(isinstance(fl.get(k), str) for k in FLOOR_TEXT):
        return f"'floor' needs text {', '.join(FLOOR_TEXT)}"
    return None


def _top_problem(s: dict[str, Any]) -> str | None:
    if s.get("schema_version") != SCHEMA_VERSION:
        return f"schema_version {s.get('schema_version')!r} is not {SCHEMA_VERSION}"
    required = {
        "tool": _text, "command": _texts, "started_at_unix_s": _num, "interrupted": _bool,
        "server": _obj, "workload": _obj, "extra": _obj,
    }  # fmt: skip
    problem = _field_problem(s, "summary", required, True)
    if problem:
        return problem
    if "floor" not in s:
        return "summary: no 'floor' (null when there was none)"
    if not all(k in s["server"] for k in ("url", "kind", "model")):
        return "'server' needs url, kind and model"
    w = s["workload"]
    if not all(_count(w.get(k)) for k in ("prompt_tokens", "output_tokens", "requests_per_level")):
        return "'workload' needs whole numbers prompt_tokens, output_tokens, requests_per_level"
    if not isinstance(s.get("levels"), list):
        return "'levels' must be a list"
    warns = s.get("warnings")
    if not isinstance(warns, list) or not all(
        isinstance(x, dict) and all(isinstance(x.get(k), str) for k in WARNING_TEXT) for x in warns
    ):
        return "'warnings' must be a list of {code, level, severity, message}"
    optional = {"client_host": _obj, "simulation": _obj, "utilisation": _obj, "clock": _obj}
    problem = _field_problem(s, "summary", optional, False)
    return problem


def shape_problem(s: Any) -> str | None:
    """What is wrong with a parsed summary, or None when report and calibrate can read it."""
    if not isinstance(s, dict):
        return "not a JSON object"
    problem = _top_problem(s)
    if problem:
        return problem
    for i, lv in enumerate(s["levels"]):
        problem = _level_problem(lv, i)
        if problem:
            return problem
    return _floor_problem(s.get("floor"))


def _typed(d: dict[str, Any], path: Path) -> RunSummary:
    from inferlab.summary import RunSummary

    try:
        typed: RunSummary = RunSummary.from_json(d)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise SummaryShapeError(f"{path}: not a run summary (missing or wrong {e})") from e
    return typed


def read_summary(path: Path) -> dict[str, Any]:
    """summary.json parsed and checked; one line naming the file when it is not a summary."""
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
    problem = shape_problem(summary)
    if problem:
        raise SummaryShapeError(
            f"{path}: not a summary written by inferlab bench/demo/simulate ({problem})"
        )
    result: dict[str, Any] = summary
    return result


_LABEL = re.compile(r"(c)=(\d+)|rate=([0-9.eE+-]+)/s")


def _kind_value(label: str) -> tuple[str, float]:
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


def _record_problem(d: Any) -> str | None:
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


def read_run_records(path: Path) -> tuple[list[Any], bool]:
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


def _skeleton(records: list[Any]) -> dict[str, Any]:
    """What a summary can say when the run was killed before writing one."""
    first = records[0] if records else None
    measured = sum(1 for r in records if r.phase == "measure")
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "inferlab (rebuilt from records.jsonl)",
        "command": [],
        "started_at_unix_s": 0.0,
        "interrupted": True,
        "server": {"url": None, "kind": None, "model": None},
        "workload": {
            "prompt_tokens": first.prompt_tokens_target if first else 0,
            "output_tokens": first.max_tokens if first else 0,
            "requests_per_level": measured,
        },
        "floor": None,
        "extra": {},
        "levels": [],
        "warnings": [],
    }


def load_run(folder: Path) -> RunSummary:
    """summary.json, completed by levels rebuilt from records.jsonl that it does not cover."""
    from inferlab.metrics.checks import warning
    from inferlab.metrics.level import summarize_level

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
    raw = read_summary(summary_path) if summary_path.exists() else _skeleton(records)
    summary = _typed(raw, summary_path)
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
