"""benchmarks/predict_accuracy.py reads a closed loop's first burst from the records: how
many of the requests sent together got their first token from the first step."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from inferlab.records import RecordWriter, RequestRecord

MS = 1_000_000


def run(folder: Path, rows: list[tuple[float, float]]) -> Path:
    """Records sent at each (send ms) with a first token at (first ms)."""
    w = RecordWriter(folder / "records.jsonl")
    for i, (send, first) in enumerate(rows):
        w.write(
            RequestRecord(
                i, "c=4", "measure", 32, 8, send_ns=int(send * MS), event_ns=[int(first * MS)]
            )
        )
    w.close()
    return folder


def test_the_first_step_of_a_burst_is_read_from_the_first_tokens(
    tmp_path: Path, predict_accuracy: ModuleType
) -> None:
    pa = predict_accuracy
    # four sent within 1 ms; the server's first step (tokens 0-4 ms apart at ~700 ms)
    # took three, the fourth came a step later; a request sent at 900 ms is not the burst
    measured = run(
        tmp_path / "measured",
        [(0.0, 700.0), (0.3, 703.0), (0.6, 1400.0), (0.9, 704.0), (900.0, 1200.0)],
    )
    # the simulator ran the shortest prompt alone (its token at 93 ms), then the rest
    predicted = run(tmp_path / "predicted", [(0.0, 93.0), (0.0, 690.0), (0.0, 690.0), (0.0, 690.0)])
    assert pa.first_step(measured) == {"took": 3, "of": 4}
    assert pa.first_step(predicted) == {"took": 1, "of": 4}
    row = {"first_step": pa.bursts(tmp_path)}
    assert "the server took 3 of 4 into its first step, the simulator 1" in pa.burst_line(row)
    alike = {"first_step": {"measured": {"took": 4, "of": 4}, "predicted": {"took": 4, "of": 4}}}
    assert pa.burst_line(alike) is None
    lone = run(tmp_path / "lone", [(0.0, 100.0), (500.0, 600.0)])
    assert pa.first_step(lone) is None  # no two sent together: no burst
