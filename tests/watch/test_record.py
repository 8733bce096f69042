"""The watch record on disk: a reader that polls it while watch starts never finds it empty."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inferlab.jsonio import dumps_line
from inferlab.watch.record import Header, Recorder, read_record
from tests.watch.helpers import physics


def _header(t: float) -> Header:
    return Header.of("http://127.0.0.1:1/v1", physics(), 0.5, 3.0, t)


def test_a_new_record_appears_with_its_header_already_in_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = tmp_path / "w.jsonl"
    seen: list[str | None] = []  # what the file held each time it was opened to append
    real_open = Path.open

    def spy(self: Path, mode: str = "r", *args: Any, **kw: Any) -> Any:
        if self == rec and "a" in mode:
            seen.append(self.read_text(encoding="utf-8") if self.exists() else None)
        return real_open(self, mode, *args, **kw)

    monkeypatch.setattr(Path, "open", spy)
    Recorder(rec, _header(1.0)).close()
    assert seen == [dumps_line(_header(1.0).to_json())]  # never created empty by `open`
    assert read_record(rec)[0] == _header(1.0)
    assert [p.name for p in tmp_path.iterdir()] == ["w.jsonl"]  # no temporary file left


def test_appending_to_a_record_adds_a_second_header_that_wins(tmp_path: Path) -> None:
    rec = tmp_path / "w.jsonl"
    Recorder(rec, _header(1.0)).close()
    r = Recorder(rec, _header(2.0))
    r.close()
    assert r.lines == 1 and read_record(rec)[0] == _header(2.0)
    assert len(rec.read_text(encoding="utf-8").splitlines()) == 2
