"""Records: one flushed line per request; a torn last line is skipped and named."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.records import RecordsWarning, RecordWriter, RequestRecord, read_records, scan_records


def _rec(i: int) -> RequestRecord:
    return RequestRecord(
        request_id=i,
        level="c=1",
        phase="measure",
        prompt_tokens_target=4,
        max_tokens=2,
        event_ns=[5, 9],
        event_tokens=[1, 1],
        http_status=200,
    )


def test_each_record_is_on_disk_before_the_writer_closes(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    w = RecordWriter(path)
    w.write(_rec(0))
    w.write(_rec(1))
    assert [r.request_id for r in read_records(path)] == [0, 1]  # flushed, not buffered
    w.close()


def test_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    w = RecordWriter(path)
    for i in range(3):
        w.write(_rec(i))
    w.close()
    text = path.read_text()
    path.write_text(text + text.splitlines()[0][:25])  # kill -9 mid-write
    read = scan_records(path)
    assert [r.request_id for r in read.records] == [0, 1, 2]
    assert len(read.problems) == 1 and "torn last line 4" in read.problems[0]
    with pytest.warns(RecordsWarning, match="torn last line"):
        assert len(read_records(path)) == 3


def test_report_renders_a_torn_run_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from inferlab.cli import main

    shutil.copy(
        Path(__file__).parent / "data" / "llama_cpu_sweep_summary.json", tmp_path / "summary.json"
    )
    w = RecordWriter(tmp_path / "records.jsonl")
    w.write(_rec(0))
    w.close()
    with (tmp_path / "records.jsonl").open("a") as f:
        f.write('{"request_id": 1, "lev')
    assert main(["report", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "torn last line 2 skipped" in err
    assert (tmp_path / "report.html").exists()
