"""guidellm's benchmarks.json / benchmarks.yaml (report schema, `metadata.version` 2):
every benchmark in it is a level.

The load is the benchmark's strategy (`config.strategy`): `concurrent` (streams),
`constant` / `poisson` (rate), `synchronous` (one at a time), `throughput` (all at once).

Where the file lists every request (`requests.successful/errored/incomplete` adding up to
`metrics.request_totals`), the level is recomputed from each request's `info.timings`
(epoch s: `request_start`, `first_token_iteration`, `last_token_iteration`) and token
counts. guidellm keeps no token times in between, so there are no gaps: those stats stay
empty. Otherwise the tool's distributions (`metrics.<name>.successful`) are taken as written.
Names differ: guidellm's ITL, (E2E - TTFT) / (tokens - 1), is inferlab's TPOT; its TPOT
(E2E / tokens, first token included) has no inferlab twin and is not read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inferlab.peers.common import (
    Aggregates,
    Doc,
    PeerFormatError,
    PeerLevel,
    PeerRun,
    as_written,
    level_from_aggregates,
    level_from_records,
    source,
    stream_record,
    with_window,
    without_gaps,
)
from inferlab.records import RequestRecord
from inferlab.summary import LatencyStats
from inferlab.vocab import LevelKind

TOOL = "guidellm"
SCHEMA = 2


def looks_like(data: object) -> bool:
    return isinstance(data, dict) and isinstance(data.get("benchmarks"), list)


def read_yaml(path: Path, text: str) -> PeerRun:
    """YAML is tried last: a file that is not YAML, or YAML of another tool, is refused."""
    import yaml  # lazily: gguf's dependency, only needed for guidellm's .yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        raise PeerFormatError(path, "neither JSON, JSON Lines, AIPerf CSV nor YAML") from None
    if not isinstance(data, dict):
        raise PeerFormatError(path, "neither JSON, JSON Lines, AIPerf CSV nor guidellm YAML")
    if not looks_like(data):
        got = ", ".join(sorted(str(k) for k in data)[:6])
        raise PeerFormatError(path, f"not a result this reads: unknown keys ({got})")
    return read(path, data)


def _strategy(path: Path, bench: Doc) -> tuple[str, LevelKind, float]:
    config = bench.sub("config")
    assert config is not None
    strat = config.sub("strategy")
    assert strat is not None
    kind = strat.data.get("type_") or strat.data.get("type")
    if kind == "concurrent":
        n = strat.number("streams") or 0.0
        return f"c={n:g}", "concurrency", n
    if kind in ("constant", "poisson"):
        r = strat.number("rate") or 0.0
        return f"rate={r:g}/s" + (" poisson" if kind == "poisson" else ""), "rate", r
    if kind == "synchronous":
        return "synchronous", "concurrency", 1.0
    if kind == "throughput":
        most = strat.number("max_concurrency", required=False)
        return "throughput", "concurrency", most or 0.0
    raise PeerFormatError(path, f"unexpected '{strat.where}.type_': {kind!r}")


def _dist(metrics: Doc, name: str, scale: float) -> LatencyStats:
    """metrics.<name>.successful as LatencyStats, times `scale` (1e-3 for ms)."""
    block = metrics.data.get(name)
    ok = block.get("successful") if isinstance(block, dict) else None
    if not isinstance(ok, dict):
        return LatencyStats.empty()
    pct = ok.get("percentiles") or {}

    def v(x: object) -> float | None:
        return float(x) * scale if isinstance(x, int | float) else None

    p50 = v(ok.get("median", pct.get("p50")))
    return LatencyStats(
        p50,
        v(pct.get("p90")),
        v(pct.get("p95")),
        v(pct.get("p99")),
        v(pct.get("p999")),
        v(ok.get("max")),
        v(ok.get("mean")),
        int(ok.get("count") or 0),
    )


def _totals(metrics: Doc, name: str) -> dict[str, Any]:
    block = metrics.data.get(name)
    return block if isinstance(block, dict) else {}


def _level(path: Path, i: int, raw: object, version: str | None) -> PeerLevel:
    bench = Doc(path, raw, f"benchmarks[{i}]")
    label, kind, value = _strategy(path, bench)
    metrics = bench.sub("metrics")
    assert metrics is not None
    totals = _totals(metrics, "request_totals")
    duration = bench.number("duration", required=False)
    records = _records(path, i, bench, label, totals)
    if records is None:  # a sample of the requests, or none: the tool's figures
        a = _aggregates(metrics, label, kind, value, duration)
        prompt = _dist(metrics, "prompt_token_count", 1.0).mean
        return level_from_aggregates(a, source(TOOL, version, path, False), prompt)
    level = level_from_records(label, kind, value, records, source(TOOL, version, path, True))
    level = as_written(without_gaps(level), _figures(metrics), PERCENTILE_NOTE)
    return with_window(level, duration) if duration else level


def _aggregates(
    metrics: Doc, label: str, kind: LevelKind, value: float, duration: float | None
) -> Aggregates:
    totals = _totals(metrics, "request_totals")
    out_tokens = _totals(metrics, "output_token_count").get("successful") or {}
    return Aggregates(
        label=label,
        kind=kind,
        value=value,
        requests_ok=int(totals.get("successful") or 0),
        requests_failed=int(totals.get("errored") or 0) + int(totals.get("incomplete") or 0),
        ttft_s=_dist(metrics, "time_to_first_token_ms", 1e-3),
        tpot_s=_dist(metrics, "inter_token_latency_ms", 1e-3),
        e2e_s=_dist(metrics, "request_latency", 1.0),
        itl_s=LatencyStats.empty(),
        output_tokens=int(out_tokens.get("total_sum") or 0),
        window_s=duration,
        output_tokens_per_s=_dist(metrics, "output_tokens_per_second", 1.0).mean,
    )


PERCENTILE_NOTE = (
    "guidellm's percentiles are sample values (a median of an even count is the one just "
    "above the middle), inferlab's interpolate between samples (numpy), as bench's do"
)


def _figures(metrics: Doc) -> dict[str, float | None]:
    """guidellm's own headline figures, as it printed them."""
    return {
        "ttft_p50_s": _dist(metrics, "time_to_first_token_ms", 1e-3).p50,
        "tpot_p50_s": _dist(metrics, "inter_token_latency_ms", 1e-3).p50,
        "output_tokens_per_s": _dist(metrics, "output_tokens_per_second", 1.0).mean,
    }


def _request(
    path: Path, where: str, raw: object, label: str, i: int, failed: str | None
) -> RequestRecord:
    req = Doc(path, raw, where)
    info = req.sub("info")
    assert info is not None
    t = info.sub("timings")
    assert t is not None
    start = t.number("request_start")
    assert start is not None
    n_in = (req.data.get("input_metrics") or {}).get("text_tokens")
    n_out = (req.data.get("output_metrics") or {}).get("text_tokens")
    first = t.number("first_token_iteration", required=False)
    last = t.number("last_token_iteration", required=False)
    send_ns = round(start * 1e9)
    if failed is not None or first is None or last is None:
        err = failed or "no token received"
        return stream_record(i, label, send_ns, [], n_in, None, str(info.data.get("error") or err))
    n = int(n_out) if isinstance(n_out, int) and n_out > 0 else 1
    events = [round(first * 1e9)] + ([round(last * 1e9)] if n > 1 else [])
    rec = stream_record(i, label, send_ns, events, n_in, n)
    rec.event_tokens = [1, n - 1] if n > 1 else [1]  # the tokens between are not timed
    cached = (req.data.get("input_metrics") or {}).get("cached_tokens")
    rec.cached_prompt_tokens = cached if isinstance(cached, int) else None
    return rec


def _records(
    path: Path, i: int, bench: Doc, label: str, totals: dict[str, Any]
) -> list[RequestRecord] | None:
    """Every request of the benchmark as a record; None when the file lists only a sample."""
    reqs = bench.sub("requests", required=False)
    if reqs is None:
        return None
    lists = {k: reqs.data.get(k) or [] for k in ("successful", "errored", "incomplete")}
    if sum(len(v) for v in lists.values()) != totals.get("total") or not lists["successful"]:
        return None
    out: list[RequestRecord] = []
    for status, items in lists.items():
        for j, raw in enumerate(items):
            where = f"benchmarks[{i}].requests.{status}[{j}]"
            failed = None if status == "successful" else status
            out.append(_request(path, where, raw, label, len(out), failed))
    return out


def read(path: Path, data: object) -> PeerRun:
    doc = Doc(path, data)
    meta = doc.sub("metadata", required=False)
    version = None
    if meta is not None:
        schema = meta.data.get("version")
        if schema != SCHEMA:
            raise PeerFormatError(path, f"'metadata.version' is {schema!r}, this reads {SCHEMA}")
        v = meta.data.get("guidellm_version")
        version = v if isinstance(v, str) else None
    benches = doc.list("benchmarks") or []
    if not benches:
        raise PeerFormatError(path, "'benchmarks' is empty")
    levels = tuple(_level(path, i, b, version) for i, b in enumerate(benches))
    return PeerRun(TOOL, version, path, None, levels)
