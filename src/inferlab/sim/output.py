"""Simulated requests -> the same records and RunSummary (summary.json) as `inferlab bench`.

Token times are gathered with numpy from the engine's step-time tables, and the
level summary is computed over those arrays (metrics.columns), so an hour-long
simulation is summarised in about a second.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from inferlab import __version__
from inferlab.load.spec import Level, Requests
from inferlab.metrics.columns import RequestColumns, summarize_columns
from inferlab.records import RecordWriter, RequestRecord
from inferlab.sim.engine import SimResult, Timeline
from inferlab.sim.pause_gc import gc_paused
from inferlab.sim.request import DECODE, PREFILL
from inferlab.summary import (
    SCHEMA_VERSION,
    ClientStats,
    LevelSummary,
    RunSummary,
    ServerBlock,
    SimulationBlock,
    Utilisation,
    Workload,
)

NS = 1_000_000_000
UNFINISHED = "unfinished when the simulation ended"


@dataclass(frozen=True, slots=True)
class TokenTimes:
    """Every request's token times in ns, one after the other (request i: offsets[i:i+2]),
    gathered from `tables_ns`: the engine's decode step ends, then its prefill tokens."""

    event_ns: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    tables_ns: npt.NDArray[np.int64]
    prefill_at: int  # where the prefill tokens begin in tables_ns (DECODE's begin at 0)

    @classmethod
    def of(cls, result: SimResult) -> TokenTimes:
        decode = np.frombuffer(result.decode_step_end_s, dtype=float)
        prefill = np.frombuffer(result.prefill_token_s, dtype=float)
        tables = np.concatenate([decode, prefill])
        tables *= NS
        tables_ns = tables.astype(np.int64)
        # A view of the tables per piece (source, start, count), then one concatenation:
        # the flat array is the only one of its size made (14 million times an hour at 20/s;
        # an index array as large would cost as much again).
        reqs, at = result.requests, (0, len(decode))
        views = [tables_ns[at[s] + b : at[s] + b + n] for r in reqs for s, b, n in r.pieces]
        event_ns = np.concatenate(views) if views else np.empty(0, dtype=np.int64)
        counts = np.fromiter((n for r in reqs for _, _, n in r.pieces), np.int64, len(views))
        per_request = np.fromiter((len(r.pieces) for r in reqs), np.int64, len(reqs))
        ends = np.concatenate([[0], np.cumsum(counts)])
        offsets = ends[np.concatenate([[0], np.cumsum(per_request)])]
        return cls(event_ns, offsets, tables_ns, len(decode))


def _ns(values: list[float]) -> npt.NDArray[np.int64]:
    return (np.asarray(values, dtype=float) * NS).astype(np.int64)


def columns(result: SimResult, times: TokenTimes) -> RequestColumns:
    reqs = result.requests
    n_out = np.diff(times.offsets)
    finished = np.array([r.finish_s is not None for r in reqs], dtype=bool)
    ok = finished & (n_out > 0)
    send = _ns([r.arrival_s for r in reqs])
    max_tokens = np.array([r.output_tokens for r in reqs], dtype=np.int64)
    return RequestColumns(
        ok=ok,
        send_ns=send,
        scheduled_ns=send,
        offsets=times.offsets,
        event_ns=times.event_ns,
        event_tokens=None,  # one token per event
        n_out=n_out,
        prompt_tokens=np.array([r.prompt_tokens for r in reqs], dtype=float),
        completion_tokens=n_out.astype(float),
        early_stop=int((ok & (n_out != max_tokens)).sum()),
        streamed_tokens_mismatch=0,
        malformed_events=0,
        errors=(UNFINISHED,) if not finished.all() else (),
    )


def to_records(
    result: SimResult, label: str, times: TokenTimes | None = None, specs: Requests | None = None
) -> list[RequestRecord]:
    with gc_paused(long_lived=True):  # the caller keeps them
        return list(iter_records(result, label, times, specs))


def iter_records(
    result: SimResult, label: str, times: TokenTimes | None = None, specs: Requests | None = None
) -> Iterator[RequestRecord]:
    """One record per simulated request, built as it is asked for (writing them needs no list).

    With the level's request specs, each record also says its prefix group, conversation
    and turn, as bench's records do."""
    tags = SpecTags.of(specs)
    times = times or TokenTimes.of(result)
    # The decoders of a step share its end time: one int per table entry, and each record's
    # times slices of that list, share the ints (14 million token times an hour at 20/s, from
    # 750,000 entries), where a list each from event_ns would make an int per token.
    table = times.tables_ns.tolist()
    at = {DECODE: 0, PREFILL: times.prefill_at}
    end_default = int(result.sim_time_s * NS)
    ones: dict[int, list[int]] = {}  # one token per event; records of a length share the list
    for r in result.requests:
        ev = _slices(table, at, r.pieces)
        n = len(ev)
        finished = r.finish_s is not None
        send = int(r.arrival_s * NS)
        yield RequestRecord(
            request_id=r.id,
            level=label,
            phase="measure",
            prompt_tokens_target=r.prompt_tokens,
            max_tokens=r.output_tokens,
            scheduled_ns=send,
            send_ns=send,
            event_ns=ev,
            event_tokens=ones.get(n) or ones.setdefault(n, [1] * n),
            end_ns=int(r.finish_s * NS) if r.finish_s is not None else end_default,
            http_status=200,
            finish_reason="length" if finished else None,
            prompt_tokens=r.prompt_tokens,
            completion_tokens=n,
            error=None if finished else UNFINISHED,
            conversation_id=tags.conversation(r.spec),
            turn=tags.turn(r.spec),
            prefix_group=tags.group(r.spec),
        )


def _slices(table: list[int], at: dict[int, int], pieces: list[tuple[int, int, int]]) -> list[int]:
    """A request's token times: its pieces' runs of `table` (a source's runs begin at `at`)."""
    if len(pieces) == 1:  # a request that finished in its prefill step
        ((source, start, count),) = pieces
        first = at[source] + start
        return table[first : first + count]
    out: list[int] = []
    for source, start, count in pieces:
        first = at[source] + start
        out += table[first : first + count]
    return out


@dataclass(frozen=True, slots=True)
class SpecTags:
    """Each spec row's prefix group, conversation and turn, as plain lists (-1: none)."""

    groups: list[int]
    conversations: list[int]
    turns: list[int]

    @classmethod
    def of(cls, specs: Requests | None) -> SpecTags:
        if specs is None:
            return cls([], [], [])
        return cls(specs.prefix_group.tolist(), specs.conversation_id.tolist(), specs.turn.tolist())

    def group(self, row: int) -> int | None:
        return self.groups[row] if 0 <= row < len(self.groups) and self.groups[row] >= 0 else None

    def conversation(self, row: int) -> int | None:
        ok = 0 <= row < len(self.conversations) and self.conversations[row] >= 0
        return self.conversations[row] if ok else None

    def turn(self, row: int) -> int:
        return self.turns[row] if 0 <= row < len(self.turns) else 0


def summarize_result(
    result: SimResult, load: Level, times: TokenTimes | None = None, stall_factor: float = 5.0
) -> LevelSummary:
    """The level block of summary.json for a simulated run (its prefix-cache hit ratio:
    the simulator's, where prompts carried their identity, as the server reports one)."""
    cols = columns(result, times or TokenTimes.of(result))
    level = summarize_columns(load.label, load.summary_kind, load.value, cols, stall_factor)
    return replace(
        level,
        preemptions=result.preemptions,
        steps=result.steps,
        client=ClientStats.idle(),
        injected_requests=sum(1 for r in result.requests if r.injected),
        prefix_cache_hit_ratio=result.predicted_hit_ratio,
    )


def _downsample(tl: Timeline, n: int = 2000) -> Utilisation:
    steps = len(tl.t_s)
    every = max(1, steps // n)
    t, b, k, q = (tl.column(i)[::every].tolist() for i in range(len(Timeline.COLUMNS)))
    kept = tuple(
        (t_s, int(batch), int(kv), int(queue))
        for t_s, batch, kv, queue in zip(t, b, k, q, strict=True)
    )
    return Utilisation(columns=tuple(Timeline.COLUMNS), rows=kept)


def build_summary(
    result: SimResult, level: LevelSummary, config: dict[str, Any], command: list[str]
) -> RunSummary:
    """The run's summary.json, the same RunSummary bench writes, marked `simulated`.

    `config` holds the simulation's settings (sim/simulated_run.py's `settings`) and
    its `workload` block."""
    settings = {k: v for k, v in config.items() if k not in ("workload", "floor")}
    return RunSummary(
        schema_version=SCHEMA_VERSION,
        tool=f"inferlab {__version__} (simulated)",
        simulated=True,
        command=tuple(command),
        started_at_unix_s=time.time(),
        interrupted=False,
        server=ServerBlock(url=None, kind="simulator", model=config.get("model")),
        workload=Workload.from_json(config["workload"]),
        floor=None,
        simulation=SimulationBlock.from_json(settings),
        utilisation=_downsample(result.timeline),
        levels=(level,),
        warnings=(),
    )


def write_records(path: Path, records: Iterable[RequestRecord]) -> None:
    w = RecordWriter(path)
    try:
        for r in records:
            w.write(r)
    finally:
        w.close()
