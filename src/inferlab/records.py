"""The raw record of one request, and the JSONL file every record is appended to as it completes.

A neutral module: bench writes records, metrics/sim/report read them, and none of
them imports another package to do so (rendering a saved run never loads aiohttp).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any

from inferlab.vocab import Phase


@dataclass(slots=True)
class RequestRecord:
    """Everything one streamed request did; a failed request is data, not an exception.

    Times are integers in ns on the run's monotonic clock (perf_counter_ns),
    relative to the run's start; `wall_start_unix_s` in the summary anchors them.
    """

    request_id: int
    level: str  # e.g. "c=8" or "rate=4/s"
    phase: Phase
    prompt_tokens_target: int
    max_tokens: int
    prompt_sha1: str = ""  # first 12 hex digits: identifies the prompt without storing it
    scheduled_ns: int = 0  # when the load generator wanted to send it
    send_ns: int = 0  # when it was sent (scheduled + client queueing delay)
    event_ns: list[int] = field(default_factory=list)  # arrival of each content event
    event_tokens: list[int] = field(default_factory=list)  # tokens carried by each event
    end_ns: int = 0
    http_status: int | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None  # from usage
    completion_tokens: int | None = None  # from usage
    cached_prompt_tokens: int | None = None
    malformed_events: int = 0
    error: str | None = None
    in_flight_at_send: int = 0  # concurrent requests when this one was sent
    retries: int = 0  # resends after a stale pooled connection failed before any response
    # What the try that never reached the server met ("ClientOSError: Can not write request
    # body ..."); None: sent once. Absent in older records (read as None).
    resent_after: str | None = None
    worker: int = 0  # which load worker sent it (bench --workers / --ray)
    host: str = ""  # that worker's host name ("" for the in-process default)
    # What the request's spec (load/) said it belongs to; defaults keep old records readable.
    conversation_id: int | None = None
    turn: int = 0  # 0: a conversation's first turn, or a lone request
    prefix_group: int | None = None  # --prefix-groups: which shared system prompt
    cached_prompt_tokens_server: int | None = None  # llama.cpp timings.cache_n (final chunk)
    server_prompt_ms: float | None = None  # llama.cpp timings.prompt_ms: its own prefill time
    # Reasoning models: tokens streamed as reasoning_content / reasoning (counted apart from
    # the answer), and when the first answer token came (None: no reasoning in the stream).
    reasoning_tokens: int = 0
    first_answer_ns: int | None = None
    # bench --repeat N: which run of its level (0 = the first); absent in older records and
    # in records of a run without --repeat (read as 0).
    repeat: int = 0
    # bench --url A --url B: the endpoint's label and the block (its place in the level's
    # sequence of blocks, 0 first) it ran in; absent in older records and single-URL runs.
    endpoint: str | None = None
    block: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.http_status == 200 and bool(self.event_ns)

    @property
    def streamed_tokens(self) -> int:
        return sum(self.event_tokens)

    @property
    def n_out(self) -> int:
        """Output tokens: the server's usage when it reports it, else what was streamed."""
        return (
            self.completion_tokens if self.completion_tokens is not None else self.streamed_tokens
        )

    @property
    def server_cached_tokens(self) -> int | None:
        """Prompt tokens the server says it reused: llama.cpp's timings.cache_n, else
        usage.prompt_tokens_details.cached_tokens (None: it said neither)."""
        c = self.cached_prompt_tokens_server
        return c if c is not None else self.cached_prompt_tokens

    @property
    def early_stop(self) -> bool:
        return self.ok and (self.finish_reason != "length" or self.n_out != self.max_tokens)

    def to_json(self) -> dict[str, Any]:
        # Shallow on purpose: dataclasses.asdict deep-copies every list (~0.6 ms for a
        # 50-token record), and 64 records finishing together would stall the loop.
        out = {name: getattr(self, name) for name in _FIELDS}
        if not self.repeat:  # a run without --repeat writes the records it always wrote
            del out["repeat"]
        if self.endpoint is None:  # nor does a run of one URL
            del out["endpoint"], out["block"]
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RequestRecord:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})


_FIELDS = tuple(f.name for f in fields(RequestRecord))


class RecordWriter:
    """Appends one JSON line per record and flushes it: an interrupted run loses nothing."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._f: IO[str] = path.open("a", encoding="utf-8")

    def write(self, record: RequestRecord) -> None:
        # Strict (allow_nan=False) without jsonio's deep copy: a record holds ints and strings.
        self._f.write(json.dumps(record.to_json(), separators=(",", ":"), allow_nan=False) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


class RecordsWarning(UserWarning):
    """A records file had lines that could not be read (a crash mid-write tears the last one)."""


@dataclass(frozen=True, slots=True)
class RecordsRead:
    """The records of a file, and what was skipped on the way (one line of text each)."""

    records: list[RequestRecord]
    problems: tuple[str, ...] = ()


def scan_records(path: Path) -> RecordsRead:
    """Read a records file; unreadable lines are skipped and named in `problems`.

    A torn last line is what `kill -9` mid-write leaves: expected, named, skipped.
    An unreadable line elsewhere means the file was edited or mixed, and is named too.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[RequestRecord] = []
    problems: list[str] = []
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(RequestRecord.from_json(json.loads(line)))
        except (json.JSONDecodeError, TypeError, AttributeError):
            where = "torn last line" if i == last else "unreadable line"
            problems.append(f"{path}: {where} {i + 1} skipped (a crash mid-write?)")
    return RecordsRead(out, tuple(problems))


def read_records(path: Path) -> list[RequestRecord]:
    """The records of a file; each skipped line is reported as a `RecordsWarning`."""
    read = scan_records(path)
    for problem in read.problems:
        warnings.warn(problem, RecordsWarning, stacklevel=2)
    return read.records
