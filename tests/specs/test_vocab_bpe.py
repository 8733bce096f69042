"""Token counts from a model's own BPE vocabulary (bench --tokenizer), on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.errors import SpecError
from inferlab.specs.vocab_bpe import load_counter

MERGES = ["h e", "l l", "he ll", "hell o", "\u0120 hello"]


def _tokenizer_json(tmp_path: Path, merges: list[object]) -> Path:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": {"type": "BPE", "vocab": {}, "merges": merges}}))
    return path


def test_merges_by_rank_with_gpt2_bytes_and_split(tmp_path: Path) -> None:
    c = load_counter(_tokenizer_json(tmp_path, list(MERGES)))
    assert c.count("hello") == 1  # h e -> he, l l -> ll, he ll -> hell, hell o -> hello
    assert c.count(" hello") == 1  # the space is GPT-2's \u0120, merged by the last rule
    assert c.count("hello world") == 1 + 6  # " world": no merges, one token per byte
    assert c.count("") == 0
    assert c.count("héllo") == 5  # é is two bytes, two symbols; only l l merges


def test_merges_as_pairs_read_the_same(tmp_path: Path) -> None:
    pairs = [m.split(" ") for m in MERGES]
    assert load_counter(_tokenizer_json(tmp_path, pairs)).count("hello hello") == 2


def test_what_it_cannot_read_is_named(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"model": {"type": "Unigram"}}))
    with pytest.raises(SpecError, match="not a BPE tokenizer.json"):
        load_counter(tmp_path / "x.json")
    (tmp_path / "m.gguf").write_bytes(b"NOPE" + bytes(64))
    with pytest.raises(SpecError, match="not a readable GGUF"):
        load_counter(tmp_path / "m.gguf")
    with pytest.raises(SpecError, match="no such file"):
        load_counter(tmp_path / "absent.gguf")


@pytest.mark.slow
def test_the_bundled_gguf_vocabulary() -> None:
    """SmolLM2's GGUF: byte-level BPE; common words with their space are one token each."""
    from inferlab.engines.bundled import smollm2_gguf_path

    c = load_counter(smollm2_gguf_path())
    assert c.count(" the time year people") == 4
    assert c.count("hello") == 1
