"""benchmarks/gaps_by_decoders.py: gaps keyed by the streams decoding at their midpoint,
per repeat, on records whose timing the test writes."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from inferlab.records import RecordWriter, RequestRecord
from tests.benchmods import benchmark_module

MS = 1_000_000


@pytest.fixture
def gaps(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    return benchmark_module("gaps_by_decoders", monkeypatch)


def _rec(i: int, events_ms: list[int], repeat: int = 0) -> RequestRecord:
    r = RequestRecord(i, "c=2", "measure", 8, len(events_ms), repeat=repeat)
    r.event_ns = [t * MS for t in events_ms]
    return r


def test_gaps_are_keyed_by_the_streams_decoding_and_counted_per_repeat(
    gaps: ModuleType,
) -> None:
    """Request 0 decodes 0-100 ms alone for its first gap (0-40), then beside request 1
    (40-100); request 1's two gaps are both beside request 0. The second repeat repeats it,
    so the counts per repeat stay those of one."""
    recs = [_rec(0, [0, 40, 100]), _rec(1, [50, 70, 90])]
    recs += [_rec(2, [0, 40, 100], 1), _rec(3, [50, 70, 90], 1)]
    g = gaps.gaps_of(recs)
    assert g.repeats == 2
    assert sorted(g.by_decoders[1]) == [40.0, 40.0]
    assert sorted(g.by_decoders[2]) == [20.0, 20.0, 20.0, 20.0, 60.0, 60.0]


def test_the_command_prints_both_sides_per_shape(
    gaps: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for side in ("measured", "predicted"):
        w = RecordWriter(tmp_path / "c=2" / side / "records.jsonl")
        for r in (_rec(0, [0, 40, 100]), _rec(1, [50, 70, 90])):
            w.write(r)
        w.close()
    assert gaps.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "c=2: gaps per repeat" in out
    assert "1 decoding       1    40.0    40.0 |      1    40.0    40.0" in out
    assert gaps.main([str(tmp_path / "none")]) == 2
