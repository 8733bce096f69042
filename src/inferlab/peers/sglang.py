"""SGLang `bench_serving --output-file`: JSONL, one line per run, each a level.

Its lines carry only the tool's aggregates (`median_ttft_ms`, `median_e2e_latency_ms`,
...; `--output-details` adds per-request lists but no send times), taken as written.
The load: `max_concurrency` and `request_rate` as in vLLM's file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferlab.peers.common import (
    Aggregates,
    Doc,
    PeerRun,
    level_from_aggregates,
    source,
    stats_ms,
)
from inferlab.peers.vllm import load_of

TOOL = "sglang bench_serving"


def looks_like(data: Any) -> bool:
    return isinstance(data, dict) and "completed" in data and "median_e2e_latency_ms" in data


def _ms(doc: Doc, metric: str, n: int) -> Any:
    def g(key: str) -> float | None:
        return doc.number(key, required=False)

    return stats_ms(
        g(f"median_{metric}_ms"),
        g(f"p90_{metric}_ms"),
        g(f"p95_{metric}_ms"),
        g(f"p99_{metric}_ms"),
        g(f"mean_{metric}_ms"),
        n=n,
    )


def _level(path: Path, i: int, line: Any) -> Any:
    doc = Doc(path, line, f"line {i + 1}")
    label, kind, value = load_of(doc)
    n = int(doc.number("completed") or 0)
    a = Aggregates(
        label=label,
        kind=kind,
        value=value,
        requests_ok=n,
        requests_failed=0,  # the file does not count failures
        ttft_s=_ms(doc, "ttft", n),
        tpot_s=_ms(doc, "tpot", n),
        e2e_s=_ms(doc, "e2e_latency", n),
        itl_s=_ms(doc, "itl", n),
        output_tokens=int(doc.number("total_output_tokens", required=False) or 0),
        window_s=doc.number("duration", required=False),
        output_tokens_per_s=doc.number("output_throughput", required=False),
    )
    total_in = doc.number("total_input_tokens", required=False)
    return level_from_aggregates(
        a, source(TOOL, None, path, False), total_in / n if total_in and n else None
    )


def read_lines(path: Path, lines: list[Any]) -> PeerRun:
    levels = tuple(_level(path, i, line) for i, line in enumerate(lines))
    return PeerRun(TOOL, None, path, None, levels)
