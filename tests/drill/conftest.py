"""Drill tests never touch the real history: every test gets its own file."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.drill.history import ENV


@pytest.fixture(autouse=True)
def history_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "drill-history.jsonl"
    monkeypatch.setenv(ENV, str(path))
    return path
