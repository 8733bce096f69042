"""NVIDIA AIPerf's exports: profile_export_aiperf.json (aggregates and the user config),
its CSV twin, and the per-request profile_export.jsonl.

AIPerf's `inter_token_latency` is per request (E2E - TTFT) / (tokens - 1): inferlab's TPOT;
its `inter_chunk_latency` list (jsonl) is the gaps between stream chunks. Times are ms, and
the jsonl's `request_start_ns` is the wall clock. The load (concurrency or request rate) is
in the JSON's `input_config.loadgen`; the CSV and the jsonl do not hold it, so it is read
from the profile_export_aiperf.json beside them when there is one.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, TypeGuard

from inferlab.peers.common import (
    Aggregates,
    Doc,
    PeerFormatError,
    PeerRun,
    event_times_ns,
    level_from_aggregates,
    level_from_records,
    source,
    stats_ms,
    stream_record,
    with_window,
)
from inferlab.records import RequestRecord
from inferlab.summary import LatencyStats
from inferlab.vocab import LevelKind

TOOL = "aiperf"
SIBLING = "profile_export_aiperf.json"


def looks_like_json(data: object) -> TypeGuard[dict[str, object]]:
    return (
        isinstance(data, dict)
        and isinstance(data.get("time_to_first_token"), dict)
        and ("input_config" in data or "request_count" in data)
    )


def looks_like_record(data: object) -> bool:
    return isinstance(data, dict) and "metadata" in data and "metrics" in data


def looks_like_csv(text: str) -> bool:
    return text.startswith("Metric,") and "Time to First Token" in text


def _loadgen(config: dict[str, Any] | None) -> dict[str, Any]:
    """The load settings: the profiling phase (0.13: `phases`), or `loadgen` (earlier)."""
    cfg = config or {}
    for phase in cfg.get("phases") or ():
        if isinstance(phase, dict) and phase.get("kind", "profiling") == "profiling":
            return phase
    got = cfg.get("loadgen")
    return got if isinstance(got, dict) else {}


def _load(config: dict[str, Any] | None, n: int) -> tuple[str, LevelKind, float]:
    loadgen = _loadgen(config)
    conc, rate = loadgen.get("concurrency"), loadgen.get("request_rate", loadgen.get("rate"))
    if isinstance(rate, int | float) and rate > 0:
        return f"rate={rate:g}/s", "rate", float(rate)
    if isinstance(conc, int | float) and conc > 0:
        return f"c={conc:g}", "concurrency", float(conc)
    return "as recorded", "concurrency", float(n)  # the file does not say


def sibling(path: Path) -> dict[str, Any]:
    """The aggregate JSON AIPerf wrote beside the CSV/jsonl ({} when absent or unreadable):
    it holds the load, the version and the benchmark's duration."""
    beside = path.with_name(SIBLING)
    if not beside.is_file() or beside == path:
        return {}
    try:
        data = json.loads(beside.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _config(data: dict[str, Any]) -> dict[str, Any] | None:
    cfg = data.get("input_config")
    return cfg if isinstance(cfg, dict) else None


def _version(data: dict[str, Any] | None) -> str | None:
    v = (data or {}).get("aiperf_version")
    return v if isinstance(v, str) else None


def check_schema(path: Path, data: dict[str, Any]) -> None:
    """schema_version "1.x" is read; a later major version is refused, not guessed at."""
    v = data.get("schema_version")
    if v is not None and not str(v).startswith("1."):
        raise PeerFormatError(path, f"'schema_version' is {v!r}, this reads 1.x")


def _window_s(data: dict[str, Any]) -> float | None:
    """AIPerf divides its output tokens by the profiling phase's span, `start_time` to
    `end_time` (ISO times), a little longer than its `benchmark_duration`."""
    from datetime import datetime

    start, end = data.get("start_time"), data.get("end_time")
    if not (isinstance(start, str) and isinstance(end, str)):
        return _avg(data, "benchmark_duration")
    try:
        span = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return _avg(data, "benchmark_duration")
    return span if span > 0 else None


def _errors(data: dict[str, Any]) -> tuple[str, ...]:
    out = []
    for e in data.get("error_summary") or ():
        d = e.get("error_details") if isinstance(e, dict) else None
        if isinstance(d, dict):
            out.append(f"{d.get('type')}: {d.get('message')} (x{e.get('count')})")
    return tuple(out[:5])


def _stats(m: dict[str, Any] | None, n: int) -> LatencyStats:
    """A metric's block {unit: ms, avg, p50, p90, p95, p99, max} in seconds."""
    if not isinstance(m, dict):
        return LatencyStats.empty()
    return stats_ms(
        m.get("p50"), m.get("p90"), m.get("p95"), m.get("p99"), m.get("avg"), m.get("max"), n
    )


def _avg(data: dict[str, Any], key: str) -> float | None:
    m = data.get(key)
    v = m.get("avg") if isinstance(m, dict) else None
    return float(v) if isinstance(v, int | float) else None


def _aggregates(path: Path, data: dict[str, Any], config: dict[str, Any] | None) -> Aggregates:
    n = int(_avg(data, "request_count") or 0)
    failed = int(_avg(data, "error_request_count") or 0)
    label, kind, value = _load(config, n)
    if _avg(data, "request_count") is None:
        raise PeerFormatError(path, "missing key 'request_count'")
    return Aggregates(
        label=label,
        kind=kind,
        value=value,
        requests_ok=n,
        requests_failed=failed,
        ttft_s=_stats(data.get("time_to_first_token"), n),
        tpot_s=_stats(data.get("inter_token_latency"), n),
        e2e_s=_stats(data.get("request_latency"), n),
        itl_s=LatencyStats.empty(),
        output_tokens=int(_avg(data, "total_osl") or 0),
        window_s=_window_s(data),
        output_tokens_per_s=_avg(data, "output_token_throughput"),
        errors=_errors(data) or (("the file keeps no error text",) if failed else ()),
    )


def read_json(path: Path, data: dict[str, object]) -> PeerRun:
    check_schema(path, data)
    config = _config(data)
    a = _aggregates(path, data, config)
    isl = _avg(data, "input_sequence_length")
    level = level_from_aggregates(a, source(TOOL, _version(data), path, False), isl)
    return PeerRun(TOOL, _version(data), path, _model(config), (level,))


def _model(config: dict[str, Any] | None) -> str | None:
    cfg = config or {}
    items = (cfg.get("models") or {}).get("items") or ()
    names = [m.get("name") for m in items if isinstance(m, dict)]
    names = names or (cfg.get("endpoint") or {}).get("model_names") or []
    return names[0] if names and isinstance(names[0], str) else None


# The CSV's first section: "Metric,avg,min,max,p1,...", one row per metric ("Name (unit)").
CSV_ROWS = {
    "Time to First Token": "time_to_first_token",
    "Inter Token Latency": "inter_token_latency",
    "Request Latency": "request_latency",
    "Input Sequence Length": "input_sequence_length",
}
# The second section: "Metric,Value".
CSV_VALUES = {
    "Request Count": "request_count",
    "Benchmark Duration": "benchmark_duration",
    "Output Token Throughput": "output_token_throughput",
    "Total Output Sequence Length": "total_osl",
    "Total OSL": "total_osl",
    "Error Request Count": "error_request_count",
}


def _csv_blocks(path: Path, text: str) -> dict[str, Any]:
    """The CSV's rows as the JSON's metric blocks ({"avg": ..., "p50": ...})."""
    out: dict[str, Any] = {}
    header: list[str] = []
    for row in csv.reader(io.StringIO(text)):
        if not row or row[0] == "Metric":
            header = row
            continue
        name = row[0].split(" (")[0]
        key = CSV_ROWS.get(name) or CSV_VALUES.get(name)
        if key is None or "(error-adjusted)" in row[0]:  # its own row, not the metric's
            continue
        try:
            values = [float(x.replace(",", "")) if x else None for x in row[1:]]
        except ValueError:
            raise PeerFormatError(
                path, f"row '{row[0]}' holds a value that is not a number"
            ) from None
        cols = header[1:] if len(header) > 2 else ["avg"]
        out[key] = dict(zip(["avg" if c == "Value" else c for c in cols], values, strict=False))
    return out


def read_csv(path: Path, text: str) -> PeerRun:
    blocks = _csv_blocks(path, text)
    if "time_to_first_token" not in blocks:
        raise PeerFormatError(path, "missing row 'Time to First Token (ms)'")
    beside = sibling(path)
    config = _config(beside)
    a = _aggregates(path, blocks, config)
    isl = _avg(blocks, "input_sequence_length")
    level = level_from_aggregates(a, source(TOOL, _version(beside), path, False), isl)
    return PeerRun(TOOL, _version(beside), path, _model(config), (level,))


def _count_note(label: str, lines: list[Any], records: list[RequestRecord]) -> tuple[str, ...]:
    """AIPerf's own output count (its tokenizer) beside the server's, when they differ."""
    own = 0
    for line in lines:
        m = (line.get("metrics") or {}).get("output_sequence_length")
        own += int(m["value"]) if isinstance(m, dict) and isinstance(m.get("value"), int) else 0
    server = sum(r.n_out for r in records if r.ok)
    if not own or own == server:
        return ()
    return (
        f"{label}: AIPerf counted {own} output tokens with its tokenizer, the server "
        f"reported {server}: throughput here uses the server's count",
    )


def _value(metrics: Doc, key: str) -> object:
    m = metrics.data.get(key)
    return m.get("value") if isinstance(m, dict) else None


def _count(metrics: Doc, key: str) -> int | None:
    """A token count (AIPerf writes whole numbers); None when absent."""
    v = _value(metrics, key)
    return v if isinstance(v, int) else None


def _record(path: Path, i: int, line: dict[str, Any]) -> RequestRecord | None:
    doc = Doc(path, line, f"line {i + 1}")
    meta = doc.sub("metadata")
    assert meta is not None
    if meta.data.get("benchmark_phase", "profiling") != "profiling":
        return None  # warm-up
    start = meta.number("request_start_ns")
    assert start is not None
    start_ns = int(meta.data["request_start_ns"])  # whole ns: a float would lose ~0.2 us
    metrics = Doc(path, doc.data.get("metrics") or {}, f"line {i + 1}.metrics")
    error = doc.data.get("error")
    n_in = _count(metrics, "input_sequence_length")
    if error or meta.data.get("was_cancelled"):
        msg = error.get("message") if isinstance(error, dict) else "cancelled"
        return stream_record(i, "", start_ns, [], n_in, None, str(msg or "error"))
    ttft_ms = _value(metrics, "time_to_first_token")
    if not isinstance(ttft_ms, int | float):
        raise PeerFormatError(path, f"missing key 'line {i + 1}.metrics.time_to_first_token'")
    chunks = _value(metrics, "inter_chunk_latency")
    gaps_s = [g / 1000.0 for g in chunks] if isinstance(chunks, list) else []
    times = event_times_ns(start_ns, ttft_ms / 1000.0, gaps_s)
    # The server's usage count where AIPerf kept it (as bench counts), else AIPerf's own
    # (its tokenizer may count the same text differently).
    n_out = _count(metrics, "usage_completion_tokens")
    if n_out is None:
        n_out = _count(metrics, "output_sequence_length")
    rec = stream_record(i, "", start_ns, times, n_in, n_out)
    rec.cached_prompt_tokens = _count(metrics, "usage_prompt_cache_read_tokens")
    return rec


def profiling_records(path: Path, lines: list[Any]) -> list[RequestRecord]:
    """The profiling phase's requests (warm-up left out), on AIPerf's wall clock in ns;
    `request_id` is the record's line in the file, from 0."""
    return [r for i, line in enumerate(lines) if (r := _record(path, i, line)) is not None]


def read_jsonl(path: Path, lines: list[Any]) -> PeerRun:
    beside = sibling(path)
    config = _config(beside)
    records = profiling_records(path, lines)
    label, kind, value = _load(config, len(records))
    for r in records:
        r.level = label
    src = source(TOOL, _version(beside), path, True)
    level = level_from_records(label, kind, value, records, src)
    notes = _count_note(label, lines, records)
    window = _window_s(beside)
    if window:  # the tool's own window, from the JSON beside: its throughput's denominator
        level = with_window(level, window)
    return PeerRun(TOOL, _version(beside), path, _model(config), (level,), notes=notes)
