"""vLLM `bench serve --save-result` JSON (vllm/benchmarks/serve.py), one level per file.

With `--save-detailed` the file keeps every request's `ttfts`, `itls`, `start_times`,
`input_lens`, `output_lens` and `errors` (seconds; an error is "" on success): the level
is recomputed from them. Without it only the tool's aggregates remain (`median_ttft_ms`,
...), taken as written. The load: `max_concurrency` (closed loop) and `request_rate`
("inf" or requests per second). The file names no vLLM version.
"""

from __future__ import annotations

import math
from pathlib import Path

from inferlab.peers.common import (
    Aggregates,
    Doc,
    PeerLevel,
    PeerRun,
    column_records,
    level_from_aggregates,
    level_from_records,
    source,
    stats_ms,
    with_window,
)
from inferlab.summary import LatencyStats
from inferlab.vocab import LevelKind

TOOL = "vllm bench serve"
PER_REQUEST = ("ttfts", "itls", "start_times", "input_lens", "output_lens", "errors")


def looks_like(data: object) -> bool:
    return (
        isinstance(data, dict)
        and "completed" in data
        and ("backend" in data or "endpoint_type" in data)
        and ("duration" in data or "median_ttft_ms" in data)
    )


def load_of(doc: Doc) -> tuple[str, LevelKind, float]:
    """The level's label, kind and value from the tool's own load settings."""
    conc = doc.number("max_concurrency", required=False)
    rate_raw = doc.data.get("request_rate", "inf")
    unbounded = rate_raw in ("inf", None) or rate_raw == math.inf  # SGLang writes Infinity
    rate = math.inf if unbounded else doc.number("request_rate")
    assert rate is not None
    if conc is not None:
        label = f"c={conc:g}" if math.isinf(rate) else f"c={conc:g} rate={rate:g}/s"
        return label, "concurrency", conc
    if not math.isinf(rate):
        return f"rate={rate:g}/s", "rate", rate
    n = doc.number("num_prompts", required=False) or doc.number("completed") or 0.0
    return "rate=inf", "concurrency", n  # every prompt sent at once


def _aggregates(doc: Doc, label: str, kind: LevelKind, value: float) -> Aggregates:
    def ms(metric: str) -> LatencyStats:
        def g(key: str) -> float | None:
            return doc.number(key, required=False)

        return stats_ms(
            p50=g(f"median_{metric}_ms"),
            p90=g(f"p90_{metric}_ms"),
            p95=g(f"p95_{metric}_ms"),
            p99=g(f"p99_{metric}_ms"),
            mean=g(f"mean_{metric}_ms"),
            n=int(doc.number("completed") or 0),
        )

    failed = int(doc.number("failed", required=False) or 0)
    return Aggregates(
        label=label,
        kind=kind,
        value=value,
        requests_ok=int(doc.number("completed") or 0),
        requests_failed=failed,
        ttft_s=ms("ttft"),
        tpot_s=ms("tpot"),
        e2e_s=ms("e2el"),
        itl_s=ms("itl"),
        output_tokens=int(doc.number("total_output_tokens", required=False) or 0),
        window_s=doc.number("duration", required=False),
        output_tokens_per_s=doc.number("output_throughput", required=False),
        errors=("the file keeps no error text (--save-detailed does)",) if failed else (),
    )


def read(path: Path, data: object) -> PeerRun:
    doc = Doc(path, data)
    label, kind, value = load_of(doc)
    detailed = all(doc.has(k) for k in PER_REQUEST)
    src = source(TOOL, None, path, detailed)
    level: PeerLevel
    if detailed:
        level = level_from_records(label, kind, value, column_records(doc, label, PER_REQUEST), src)
        duration = doc.number("duration", required=False)
        if duration:  # the tool's own window (its throughput's denominator)
            level = with_window(level, duration)
    else:
        total_in = doc.number("total_input_tokens", required=False)
        done = doc.number("completed") or 0.0
        level = level_from_aggregates(
            _aggregates(doc, label, kind, value),
            src,
            total_in / done if total_in and done else None,
        )
    model = doc.data.get("model_id")
    return PeerRun(TOOL, None, path, model if isinstance(model, str) else None, (level,))


def read_lines(path: Path, rows: list[object]) -> PeerRun:
    """`--append-result`: one run a line, each a level."""
    runs = [read(path, r) for r in rows]
    levels = tuple(lv for run in runs for lv in run.levels)
    return PeerRun(TOOL, None, path, runs[0].model, levels)
