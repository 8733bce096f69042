"""Simulated requests -> the same records and summary.json schema as `inferlab bench`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from inferlab import __version__
from inferlab.metrics.level import summarize_level
from inferlab.records import RecordWriter, RequestRecord
from inferlab.sim.engine import SimResult

NS = 1_000_000_000


def to_records(result: SimResult, label: str) -> list[RequestRecord]:
    out = []
    for r in result.requests:
        times = result.token_times(r)
        finished = r.finish_s is not None
        out.append(
            RequestRecord(
                request_id=r.id,
                level=label,
                phase="measure",
                prompt_tokens_target=r.prompt_tokens,
                max_tokens=r.output_tokens,
                scheduled_ns=int(r.arrival_s * NS),
                send_ns=int(r.arrival_s * NS),
                event_ns=[int(t * NS) for t in times],
                event_tokens=[1] * len(times),
                end_ns=int((r.finish_s or result.sim_time_s) * NS),
                http_status=200,
                finish_reason="length" if finished else None,
                prompt_tokens=r.prompt_tokens,
                completion_tokens=len(times),
                error=None if finished else "unfinished when the simulation ended",
            )
        )
    return out


def _downsample(rows: list[tuple[float, int, int, int]], n: int = 2000) -> list[list[float]]:
    step = max(1, len(rows) // n)
    return [list(r) for r in rows[::step]]


def build_summary(
    result: SimResult,
    label: str,
    kind: str,
    value: float,
    records: list[RequestRecord],
    config: dict[str, Any],
    command: list[str],
    stall_factor: float = 5.0,
) -> dict[str, Any]:
    level = summarize_level(label, kind, value, records, stall_factor).to_json()
    level["preemptions"] = result.preemptions
    level["steps"] = result.steps
    level["client"] = {
        "cpu_s": 0.0,
        "wall_s": 0.0,
        "cpu_fraction": 0.0,
        "loop_lag_p99_s": 0.0,
        "loop_lag_max_s": 0.0,
    }
    injected = [rec for rec, r in zip(records, result.requests, strict=True) if r.injected]
    level["injected_requests"] = len(injected)
    return {
        "schema_version": 1,
        "tool": f"inferlab {__version__} (simulated)",
        "simulated": True,
        "command": command,
        "started_at_unix_s": time.time(),
        "interrupted": False,
        "server": {"url": None, "kind": "simulator", "model": config.get("model")},
        "workload": config["workload"],
        "floor": config.get("floor"),
        "simulation": {k: v for k, v in config.items() if k not in ("workload", "floor")},
        "utilisation": {
            "columns": ["t_s", "batch", "kv_blocks_used", "queue_length"],
            "rows": _downsample(result.timeline),
        },
        "extra": {},
        "levels": [level],
        "warnings": [],
    }


def write_records(path: Path, records: list[RequestRecord]) -> None:
    w = RecordWriter(path)
    try:
        for r in records:
            w.write(r)
    finally:
        w.close()
