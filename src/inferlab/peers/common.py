"""What every peer reader shares: the refusal, typed look-ups, and the two ways a level is
built (recomputed from per-request values, or taken from the tool's aggregates).

A reader turns one file into a `PeerRun`: its levels as `LevelSummary` (each with its
`source`), the per-request records behind them where the file has them, and the mean
prompt and output lengths the file states. Nothing is invented: a figure the file lacks
stays None.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from inferlab.errors import InferlabError
from inferlab.metrics.level_summary import summarize_level
from inferlab.peers.repeat_records import ToolAggregate
from inferlab.records import RequestRecord
from inferlab.summary import LatencyStats, LevelSummary, PeerSource
from inferlab.vocab import LevelKind

if TYPE_CHECKING:
    from inferlab.physics.floor import Floor

ACCEPTED = (
    "vLLM `bench serve --save-result` JSON, AIPerf profile_export_aiperf.json / .csv / "
    "profile_export.jsonl (or a --num-profile-runs folder's aggregate JSON), guidellm "
    "benchmarks.json / .yaml (v2), SGLang bench_serving JSONL, llama-bench / "
    "llama-batched-bench JSON(L), or an inferlab run folder"
)


class PeerFormatError(InferlabError):
    """A file no reader accepts, or one a reader recognised but cannot read: one line."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}; accepted: {ACCEPTED}")


@dataclass(frozen=True, slots=True)
class PeerLevel:
    """One level of a peer's file: its summary, and the records it was recomputed from
    (empty when the file holds only the tool's aggregates)."""

    summary: LevelSummary
    records: tuple[RequestRecord, ...] = ()
    prompt_tokens_mean: float | None = None
    output_tokens_mean: float | None = None
    # False: the file has no per-request send times (SGLang): each record is sent at 0, so
    # its latencies hold but nothing across requests (window, in flight) comes from them.
    send_times: bool = True
    in_flight_stated: float | None = None  # the tool's own mean of requests in flight


@dataclass(frozen=True, slots=True)
class PeerRepeat:
    """One run of a tool's repeated benchmark (AIPerf `--num-profile-runs`), read as the
    single-run reader reads it, and the tool's own figures for it."""

    label: str  # the tool's name for the run: "run_0001"
    level: PeerLevel  # records rebased to its own first send
    first_send_ns: int  # that first send on the tool's clock: the runs on one timeline
    as_written: LevelSummary | None = None  # the tool's own statistics of this run


@dataclass(frozen=True, slots=True)
class PeerRun:
    """A whole peer file, read. A repeated benchmark also holds each run (`repeats`) and
    the tool's own interval over them; its one level is then their combination
    (peers/repeats.py)."""

    tool: str
    version: str | None
    path: Path
    model: str | None
    levels: tuple[PeerLevel, ...]
    command: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    repeats: tuple[PeerRepeat, ...] = ()
    tool_aggregate: ToolAggregate | None = None


MAX_BYTES = 1 << 30  # a peer's file this large is no benchmark result


def file_text(path: Path) -> str:
    """The file as text; refused in one line when unreadable, too large, binary or empty."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise PeerFormatError(path, "over 1 GiB: not a benchmark result")
        raw = path.read_bytes()
    except OSError as e:
        raise PeerFormatError(path, f"cannot be read ({e.strerror or e})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise PeerFormatError(path, "not UTF-8 text (a binary file?)") from None
    if not text.strip():
        raise PeerFormatError(path, "empty")
    return text


def json_lines(path: Path, text: str) -> list[object] | None:
    """Every non-blank line as JSON, or None when the first line is not JSON."""
    rows: list[object] = []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            if not rows:
                return None
            raise PeerFormatError(path, f"line {i + 1} is not JSON (cut short?)") from None
    return rows


def prefill_floor_s(f: Floor, prompt_tokens: float) -> float | None:
    """prompt tokens x 2 x parameters / FLOP/s: no prefill of this prompt is faster."""
    flops = f.peak_flops_per_s
    if flops <= 0 or prompt_tokens < 1:
        return None
    return f.cost.prefill_flops(round(prompt_tokens)) / flops


class Doc:
    """A parsed JSON object with look-ups that refuse in one line naming the key."""

    def __init__(self, path: Path, data: object, where: str = "") -> None:
        if not isinstance(data, dict):
            raise PeerFormatError(path, f"{where or 'the file'} is not a JSON object")
        self.path, self.data, self.where = path, data, where

    def name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def has(self, key: str) -> bool:
        return key in self.data

    def need(self, key: str) -> object:
        if key not in self.data:
            raise PeerFormatError(self.path, f"missing key '{self.name(key)}'")
        return self.data[key]

    def number(self, key: str, required: bool = True) -> float | None:
        v = self.need(key) if required else self.data.get(key)
        if v is None and not required:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise PeerFormatError(self.path, f"'{self.name(key)}' is not a number: {v!r}")
        return float(v)

    def list(self, key: str, required: bool = True) -> list[Any] | None:
        v = self.need(key) if required else self.data.get(key)
        if v is None and not required:
            return None
        if not isinstance(v, list):
            raise PeerFormatError(self.path, f"'{self.name(key)}' is not a list")
        return v

    def sub(self, key: str, required: bool = True) -> Doc | None:
        v = self.need(key) if required else self.data.get(key)
        if v is None and not required:
            return None
        return Doc(self.path, v, self.name(key))


def source(tool: str, version: str | None, path: Path, per_request: bool) -> PeerSource:
    basis: Literal["per_request", "aggregates"] = "per_request" if per_request else "aggregates"
    return PeerSource(tool=tool, version=version, file=str(path), basis=basis)


def event_times_ns(send_ns: int, ttft_s: float, gaps_s: list[float]) -> list[int]:
    """Each stream event's time in ns: the first at TTFT after the send, then each gap.
    Added up in whole ns (a wall-clock epoch in float seconds keeps only ~0.2 us)."""
    t = send_ns + round(ttft_s * 1e9)
    out = [t]
    for gap in gaps_s:
        t += round(float(gap) * 1e9)
        out.append(t)
    return out


def column_records(doc: Doc, label: str, keys: tuple[str, ...]) -> list[RequestRecord]:
    """Per-request columns (ttfts, itls, input_lens, output_lens, errors, and start_times
    where the tool keeps them: vLLM, SGLang) as records; a column of another length than
    ttfts is refused naming it."""
    cols = {k: doc.list(k) or [] for k in keys}
    n = len(cols["ttfts"])
    for k, v in cols.items():
        if len(v) != n:
            raise PeerFormatError(doc.path, f"'{doc.name(k)}' holds {len(v)} values, 'ttfts' {n}")
    out = []
    for i in range(n):
        err = cols["errors"][i] or None
        send = round(float(cols["start_times"][i]) * 1e9) if "start_times" in cols else 0
        itls = cols["itls"][i]
        if not isinstance(itls, list):
            raise PeerFormatError(doc.path, f"'{doc.name('itls')}[{i}]' is not a list")
        times = [] if err else event_times_ns(send, float(cols["ttfts"][i]), itls)
        n_in, n_out = cols["input_lens"][i], cols["output_lens"][i]
        out.append(stream_record(i, label, send, times, n_in, n_out, err))
    return out


def stream_record(
    i: int,
    label: str,
    send_ns: int,
    ns: list[int],
    prompt_tokens: int | None,
    output_tokens: int | None,
    error: str | None = None,
) -> RequestRecord:
    """A request as bench would have recorded it: sent at `send_ns`, one stream event at
    each of `ns`. Output lengths are the tool's count, and the request is marked as having
    run to its length: a peer's file does not say what was asked, and the varying-length
    check (peers/judge.py) looks at the counts."""
    n_out = output_tokens if output_tokens is not None else len(ns)
    ok = error is None and bool(ns)
    return RequestRecord(
        request_id=i,
        level=label,
        phase="measure",
        prompt_tokens_target=prompt_tokens or 0,
        max_tokens=n_out,
        scheduled_ns=send_ns,
        send_ns=send_ns,
        event_ns=ns if ok else [],
        event_tokens=[1] * len(ns) if ok else [],
        end_ns=ns[-1] if ns else send_ns,
        http_status=200 if ok else None,
        finish_reason="length" if ok else None,
        prompt_tokens=prompt_tokens,
        completion_tokens=n_out if ok else None,
        error=None if ok else one_line(error or "no token received"),
    )


def one_line(error: str) -> str:
    """A tool's error text as one line: a traceback's last line (the exception) suffices."""
    lines = [x.strip() for x in error.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "error"


def rebase(records: list[RequestRecord]) -> list[RequestRecord]:
    """Times relative to the first send (as bench's run clock), so ns stay small."""
    if not records:
        return records
    t0 = min(r.send_ns for r in records)
    out = []
    for r in records:
        out.append(
            dataclasses.replace(
                r,
                scheduled_ns=r.scheduled_ns - t0,
                send_ns=r.send_ns - t0,
                event_ns=[t - t0 for t in r.event_ns],
                end_ns=r.end_ns - t0,
            )
        )
    return out


def level_from_records(
    label: str, kind: LevelKind, value: float, records: list[RequestRecord], src: PeerSource
) -> PeerLevel:
    """Percentiles, gaps and throughput recomputed by bench's own summariser."""
    recs = rebase(records)
    s = summarize_level(label, kind, value, recs)
    s = dataclasses.replace(s, source=src)
    ok = [r for r in recs if r.ok]
    prompts = [r.prompt_tokens for r in ok if r.prompt_tokens is not None]
    outs = [r.n_out for r in ok]
    return PeerLevel(
        s,
        tuple(recs),
        sum(prompts) / len(prompts) if prompts else None,
        sum(outs) / len(outs) if outs else None,
    )


def with_window(level: PeerLevel, window_s: float) -> PeerLevel:
    """The tool's own measurement window (its throughput's denominator) in place of the
    first-send-to-last-token span recomputed from the records."""
    s = level.summary
    s = dataclasses.replace(
        s, window_s=window_s, output_tokens_per_s_total=s.output_tokens / window_s
    )
    return dataclasses.replace(level, summary=s)


def as_written(level: PeerLevel, figures: dict[str, float | None], note: str) -> PeerLevel:
    """Keep the tool's own headline figures beside the recomputed ones (`as_written` in the
    level's JSON), with why they may differ; the report shows both where they do."""
    s = level.summary
    rest = {**s.rest, "as_written": {**figures, "note": note}}
    return dataclasses.replace(level, summary=dataclasses.replace(s, rest=rest))


def without_gaps(level: PeerLevel) -> PeerLevel:
    """A level whose file kept only each request's first and last token times: TTFT, TPOT
    and E2E are exact, but no gap between two tokens was measured, so those stats stay
    empty (not the even split the two-event records would give)."""
    empty = LatencyStats.empty()
    s = dataclasses.replace(
        level.summary,
        gap_s=empty,
        worst_gap_per_request_s=empty,
        stall_threshold_s=0.0,
        stall_count=0,
        multi_token_events=0,
    )
    return dataclasses.replace(level, summary=s)


def stats_ms(
    p50: float | None = None,
    p90: float | None = None,
    p95: float | None = None,
    p99: float | None = None,
    mean: float | None = None,
    max_: float | None = None,
    n: int = 0,
) -> LatencyStats:
    """A tool's percentiles in ms, as LatencyStats in seconds (None stays None)."""

    def s(x: float | None) -> float | None:
        return None if x is None else x / 1000.0

    return LatencyStats(s(p50), s(p90), s(p95), s(p99), None, s(max_), s(mean), n)


@dataclass(frozen=True, slots=True, kw_only=True)
class Aggregates:
    """A level as a tool summarised it; every figure optional but the counts."""

    label: str
    kind: LevelKind
    value: float | None
    requests_ok: int
    requests_failed: int
    ttft_s: LatencyStats
    tpot_s: LatencyStats
    e2e_s: LatencyStats
    itl_s: LatencyStats
    output_tokens: int
    window_s: float | None
    output_tokens_per_s: float | None
    errors: tuple[str, ...] = ()


def level_from_aggregates(a: Aggregates, src: PeerSource, prompt_mean: float | None) -> PeerLevel:
    """The tool's own figures, as it wrote them; what it does not state stays empty."""
    per_user = 1.0 / a.tpot_s.p50 if a.tpot_s.p50 else 0.0
    n = a.requests_ok + a.requests_failed
    s = LevelSummary(
        label=a.label,
        concurrency=a.value if a.kind == "concurrency" else None,
        rate_per_s=a.value if a.kind == "rate" else None,
        requests_measured=n,
        requests_warmup=0,
        requests_ok=a.requests_ok,
        requests_failed=a.requests_failed,
        requests_early_stop=0,
        errors=a.errors,
        ttft_s=a.ttft_s,
        tpot_s=a.tpot_s,
        e2e_s=a.e2e_s,
        gap_s=a.itl_s,
        worst_gap_per_request_s=LatencyStats.empty(),
        stall_threshold_s=0.0,
        stall_count=0,
        multi_token_events=0,
        queue_delay_s=LatencyStats.empty(),
        output_tokens=a.output_tokens,
        window_s=a.window_s or 0.0,
        output_tokens_per_s_total=a.output_tokens_per_s or 0.0,
        output_tokens_per_s_per_user=per_user,
        mean_active_streams=0.0,
        prompt_tokens_usage_p50=None,
        completion_tokens_p50=None,
        streamed_tokens_mismatch=0,
        malformed_events=0,
        source=src,
    )
    out_mean = a.output_tokens / a.requests_ok if a.requests_ok else None
    return PeerLevel(s, (), prompt_mean, out_mean)
