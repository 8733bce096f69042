"""SGLang `bench_serving --output-file`: JSONL, one line per run, each a level.

With `--output-details` a line holds each request's `ttfts`, `itls`, `input_lens`,
`output_lens` and `errors` (seconds), but no send times: the latencies are recomputed from
them (TTFT, TPOT, gaps, SLO counts), while the window is the tool's `duration` and the batch
in flight its own `concurrency`. Without it, the aggregates (`median_ttft_ms`,
`median_e2e_latency_ms`, ...) are taken as written. The load: `max_concurrency` and
`request_rate` as in vLLM's file (SGLang writes an unbounded rate as `Infinity`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from inferlab.peers.common import (
    Aggregates,
    Doc,
    PeerLevel,
    PeerRun,
    as_written,
    column_records,
    level_from_aggregates,
    level_from_records,
    source,
    stats_ms,
    with_window,
)
from inferlab.peers.vllm import load_of
from inferlab.summary import LatencyStats
from inferlab.vocab import LevelKind

TOOL = "sglang bench_serving"


def looks_like(data: object) -> bool:
    return isinstance(data, dict) and "completed" in data and "median_e2e_latency_ms" in data


def _ms(doc: Doc, metric: str, n: int) -> LatencyStats:
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


DETAILS = ("ttfts", "itls", "input_lens", "output_lens", "errors")


def _detailed(doc: Doc, label: str, kind: LevelKind, value: float) -> PeerLevel:
    level = level_from_records(
        label, kind, value, column_records(doc, label, DETAILS), source(TOOL, None, doc.path, True)
    )
    duration = doc.number("duration", required=False)
    if duration:
        level = with_window(level, duration)
    stated = doc.number("concurrency", required=False)
    s = dataclasses.replace(level.summary, mean_active_streams=0.0)  # not from send times
    level = dataclasses.replace(level, summary=s, send_times=False, in_flight_stated=stated)
    return as_written(level, _figures(doc), TPOT_NOTE)


TPOT_NOTE = (
    "SGLang's TPOT runs to the stream's end, a little after the last token; the file's "
    "per-request gaps stop at the last token"
)


def _figures(doc: Doc) -> dict[str, float | None]:
    def s(key: str) -> float | None:
        v = doc.number(key, required=False)
        return None if v is None else v / 1000.0

    return {
        "ttft_p50_s": s("median_ttft_ms"),
        "tpot_p50_s": s("median_tpot_ms"),
        "output_tokens_per_s": doc.number("output_throughput", required=False),
    }


def _level(path: Path, i: int, line: object) -> PeerLevel:
    doc = Doc(path, line, f"line {i + 1}")
    label, kind, value = load_of(doc)
    if all(doc.has(k) for k in DETAILS):
        return _detailed(doc, label, kind, value)
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


def read_lines(path: Path, lines: list[object]) -> PeerRun:
    levels = tuple(_level(path, i, line) for i, line in enumerate(lines))
    return PeerRun(TOOL, None, path, None, levels)
