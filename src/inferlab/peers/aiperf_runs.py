"""AIPerf's repeated benchmark (`aiperf profile --num-profile-runs N`, 0.13): the folder
holding `aggregate/profile_export_aiperf_aggregate.json` and `profile_runs/run_000N/`.

Each run is read from its own `profile_export.jsonl` exactly as a single run is
(peers/aiperf.py), its `profile_export_aiperf.json` kept beside as the tool's own figures.
The aggregate JSON holds AIPerf's interval over the runs: `metrics.<metric>_<stat>` =
{mean, std, cv, ci_low, ci_high, t_critical, unit}, a Student-t interval over the runs'
own statistics (mean of the runs' p50s, not a p50 over their requests). Which runs are the
same measurement, and the level they combine into, is peers/repeats.py's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeGuard

from inferlab.peers import aiperf
from inferlab.peers.common import Doc, PeerFormatError, PeerRepeat, PeerRun, file_text, json_lines
from inferlab.peers.repeat_records import ToolAggregate, ToolInterval
from inferlab.peers.repeats import combine

AGGREGATE = "profile_export_aiperf_aggregate.json"
PER_REQUEST = "profile_export.jsonl"
# inferlab's quantity -> AIPerf's metric (its key is "<metric>_<stat>")
TOOL_METRICS = {
    "ttft_s": "time_to_first_token",
    "tpot_s": "inter_token_latency",  # per request: inferlab's TPOT
    "e2e_s": "request_latency",
}
PERCENTILES = ("p50", "p90", "p95", "p99")
THROUGHPUT = ("output_tokens_per_s_total", "output_token_throughput_avg")
SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}
PER_SECOND = {"tokens/sec", "tokens/s"}


def looks_like_aggregate(data: object) -> TypeGuard[dict[str, Any]]:
    meta = data.get("metadata") if isinstance(data, dict) else None
    return (
        isinstance(data, dict)
        and isinstance(meta, dict)
        and "run_labels" in meta
        and isinstance(data.get("metrics"), dict)
    )


def _need(doc: Doc, key: str) -> float:
    v = doc.number(key)
    assert v is not None  # required: number() refused it otherwise
    return v


def _tool_interval(metrics: Doc, quantity: str, key: str) -> ToolInterval | None:
    """One statistic as AIPerf aggregated it, in inferlab's unit; the interval clipped at
    0 (no time or rate is negative), the tool's own low end kept where it was."""
    m = metrics.sub(key, required=False)
    if m is None:
        return None
    unit = str(m.data.get("unit"))
    per_s = 1.0 if unit in PER_SECOND else None
    scale = per_s if quantity == THROUGHPUT[0] else SECONDS.get(unit)
    if scale is None:
        raise PeerFormatError(m.path, f"'{m.name('unit')}' is {unit!r}: not a unit this reads")
    low = _need(m, "ci_low") * scale
    return ToolInterval(
        quantity=quantity,
        metric=key,
        mean=_need(m, "mean") * scale,
        std=_need(m, "std") * scale,
        cv=m.number("cv", required=False),
        ci=(max(low, 0.0), max(_need(m, "ci_high") * scale, 0.0)),
        low_as_written=low if low < 0 else None,
    )


def _tool_aggregate(doc: Doc, version: str | None, runs: int) -> ToolAggregate:
    metrics, meta = doc.sub("metrics"), doc.sub("metadata")
    assert metrics is not None and meta is not None
    wanted = [(f"{q}.{p}", f"{m}_{p}") for q, m in TOOL_METRICS.items() for p in PERCENTILES]
    found = [iv for q, k in [*wanted, THROUGHPUT] if (iv := _tool_interval(metrics, q, k))]
    confidence = meta.number("confidence_level", required=False) or 0.95
    t = next((v for k, v in metrics.data.items() if k.endswith("_p50") and isinstance(v, dict)), {})
    t_crit = t.get("t_critical")
    t_text = f"t = {t_crit:.4g}, " if isinstance(t_crit, int | float) else ""
    method = (
        f"Student-t over the {runs} runs' own values: mean ± t x std / sqrt({runs}) "
        f"({t_text}{runs - 1} degrees of freedom); every run included"
    )
    return ToolAggregate(
        tool=f"aiperf {version}" if version else "aiperf",
        runs=runs,
        confidence=confidence,
        method=method,
        intervals=tuple(found),
    )


def _read_run(folder: Path, label: str) -> tuple[PeerRepeat, PeerRun]:
    """One run as a single run reads (its jsonl, the JSON beside it for the load and the
    window), the tool's own figures of it, and its first send on AIPerf's clock."""
    path = folder / PER_REQUEST
    if not path.is_file():
        raise PeerFormatError(path, f"missing: run '{label}' has no per-request file")
    lines = json_lines(path, file_text(path))
    if not lines or not all(isinstance(x, dict) for x in lines):
        raise PeerFormatError(path, "not AIPerf's per-request JSON lines")
    single = aiperf.read_jsonl(path, lines)
    raw = aiperf.profiling_records(path, lines)
    written = None
    data = aiperf.sibling(path)  # {} when absent or unreadable
    if aiperf.looks_like_json(data):
        written = aiperf.read_json(path.with_name(aiperf.SIBLING), data).levels[0].summary
    first = min((r.send_ns for r in raw), default=0)
    return PeerRepeat(label, single.levels[0], first, written), single


def _labels(path: Path, meta: Doc) -> list[str]:
    """The runs to read: `run_labels`, less any the tool lists among its failed runs."""
    labels = meta.list("run_labels") or []
    failed = json.dumps(meta.data.get("failed_runs") or [])
    out = [x for x in labels if isinstance(x, str) and json.dumps(x) not in failed]
    if not out:
        raise PeerFormatError(path, "'metadata.run_labels' names no run that finished")
    return out


def read_aggregate(path: Path, data: dict[str, Any]) -> PeerRun:
    """The whole folder: every run, AIPerf's own interval, and the runs combined."""
    aiperf.check_schema(path, data)
    doc = Doc(path, data)
    meta = doc.sub("metadata")
    assert meta is not None
    root = path.parent.parent if path.parent.name == "aggregate" else path.parent
    read = [_read_run(root / "profile_runs" / x, x) for x in _labels(path, meta)]
    version = data.get("aiperf_version")
    version = version if isinstance(version, str) else None
    notes = tuple(f"{rep.label}: {n}" for rep, single in read for n in single.notes)
    run = PeerRun(
        aiperf.TOOL,
        version,
        path,
        read[0][1].model,
        (read[0][0].level,),
        notes=notes,
        repeats=tuple(rep for rep, _ in read),
        tool_aggregate=_tool_aggregate(doc, version, len(read)),
    )
    return combine(run, None)[0]
