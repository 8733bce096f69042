"""`report A B` on two runs of the same scheduled requests (a prediction and its measurement
of a trace or an open loop) pairs them request by request and plots both runs' TTFT and
TPOT against each request's instant; a closed loop (no schedule) gets no such plot.

The run folders are written here from records made for the purpose (no server)."""

from __future__ import annotations

from pathlib import Path

from inferlab.jsonio import write_json
from inferlab.metrics.runfolder import load_summary
from inferlab.records import RecordWriter, RequestRecord
from inferlab.report.per_request import folder_pairs, open_loop, pair_requests
from tests.clirun import RunCli

MS = 1_000_000


def _rec(i: int, at_ms: int, ttft_ms: int, tpot_ms: int, tokens: int, level: str) -> RequestRecord:
    r = RequestRecord(i, level, "measure", 16, tokens)
    r.scheduled_ns = r.send_ns = 5_000 * MS + at_ms * MS
    r.event_ns = [r.send_ns + (ttft_ms + k * tpot_ms) * MS for k in range(tokens)]
    r.http_status, r.event_tokens, r.completion_tokens = 200, [1] * tokens, tokens
    return r


def _folder(out: Path, recs: list[RequestRecord]) -> Path:
    w = RecordWriter(out / "records.jsonl")
    for r in recs:
        w.write(r)
    w.close()
    write_json(out / "summary.json", load_summary(out).to_json())
    return out


def _trace(slow_ms: int, level: str = "trace") -> list[RequestRecord]:
    """Four requests at 0, 0.5, 0.6 and 2 s; the third's first token `slow_ms` later."""
    return [
        _rec(0, 0, 100, 11, 5, level),
        _rec(1, 500, 120, 12, 4, level),
        _rec(2, 600, 100 + slow_ms, 20, 3, level),
        _rec(3, 2000, 90, 11, 1, level),  # one token: no TPOT
    ]


def test_requests_pair_by_level_and_id_with_their_instants() -> None:
    pairs = pair_requests(_trace(0), _trace(400))
    assert [p.request_id for p in pairs] == [0, 1, 2, 3]
    assert [round(p.at_s, 3) for p in pairs] == [0.0, 0.5, 0.6, 2.0]
    third = pairs[2]
    assert round(third.ttft_a_s, 3) == 0.1 and round(third.ttft_b_s, 3) == 0.5
    assert round(third.tpot_b_s or 0, 3) == 0.02 and pairs[3].tpot_b_s is None
    assert open_loop(pairs)
    warm = _trace(0)
    warm[0].phase = "warmup"  # only measured requests pair
    assert [p.request_id for p in pair_requests(warm, _trace(0))] == [1, 2, 3]


def test_a_closed_loop_is_not_plotted_request_by_request() -> None:
    closed = [_rec(i, 0, 100, 11, 4, "c=4") for i in range(4)]  # no schedule: all at 0
    assert not open_loop(pair_requests(closed, closed))


def test_report_of_a_prediction_and_its_measurement_plots_each_request(
    run_cli: RunCli, tmp_path: Path
) -> None:
    sim = _folder(tmp_path / "sim", _trace(0))
    meas = _folder(tmp_path / "meas", _trace(400))
    assert len(folder_pairs(sim, meas)) == 4
    code, out, err = run_cli("report", str(sim), str(meas), "--out", str(tmp_path / "cmp"))
    assert code == 0, err
    assert "per request (4 in both runs)" in out
    png = tmp_path / "cmp" / "per_request.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "cmp" / "compare.html").read_text(encoding="utf-8")
    assert "<h2>Request by request</h2>" in page and 'alt="per_request"' in page
