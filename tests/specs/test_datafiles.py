"""The catalogues' marshal cache: read when it matches the TOML, passed over otherwise."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inferlab.specs import datafiles


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("INFERLAB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "catalogues"


def test_a_parse_is_cached_and_the_cache_is_what_is_read(cache: Path) -> None:
    first = datafiles.read_catalogue("models.toml")
    (kept,) = cache.iterdir()
    assert kept.name.startswith("models.toml.")
    assert (
        datafiles.read_catalogue("models.toml")
        == first
        == datafiles._parse(os.path.join(datafiles._DATA_DIR, "models.toml"))
    )
    kept.write_bytes(b"\xff not marshal")  # damaged: the TOML is read again, and re-cached
    assert datafiles.read_catalogue("models.toml") == first
    assert datafiles.read_catalogue("models.toml") == first


def test_the_cache_answers_when_it_matches(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    datafiles.read_catalogue("hardware.toml")
    monkeypatch.setattr(datafiles, "_parse", lambda path: pytest.fail("parsed again"))
    assert "h100-sxm" in datafiles.read_catalogue("hardware.toml")


def test_a_changed_file_is_a_new_key(tmp_path: Path, cache: Path) -> None:
    toml = tmp_path / "data"
    toml.mkdir()
    (toml / "x.toml").write_text("[a]\nsource = 's'\n")
    assert datafiles._cached_path("x.toml", str(toml / "x.toml")) != datafiles._cached_path(
        "x.toml", str(_rewritten(toml / "x.toml", "[a]\nsource = 'longer'\n"))
    )


def _rewritten(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_an_unwritable_cache_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("INFERLAB_CACHE_DIR", str(blocker))
    assert "llama-3-8b" in datafiles.read_catalogue("models.toml")
