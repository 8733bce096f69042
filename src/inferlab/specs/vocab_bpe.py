"""Token counts from a model's own byte-level BPE vocabulary: a GGUF's or a tokenizer.json's.

`bench --tokenizer FILE` uses it when the server has no /tokenize (a hosted API, TGI), so
prompts still have the length asked. It reads the vocabulary and merges (GGUF:
`tokenizer.ggml.tokens` / `tokenizer.ggml.merges` with `tokenizer.ggml.model` = gpt2;
tokenizer.json: a `BPE` model), splits text as GPT-2 does (words with their leading
space, digit runs, punctuation runs, whitespace), maps bytes to GPT-2's printable
alphabet and merges by rank. Special tokens (BOS) are not added, as llama-server's
/tokenize adds none. Exact for plain words and spaces (the prompts bench makes); the
split of digits and punctuation follows GPT-2's rule, which some models refine (Llama 3
groups digits by three), so counts of such text can differ by a token here and there.
SentencePiece vocabularies (`tokenizer.ggml.model` = llama) are refused, named.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from inferlab.errors import SpecError
from inferlab.specs.gguf_header import GGUFHeaderError, read_header

# GPT-2's split, with \p{L} as [^\W\d_] and \p{N} as \d (Python's re has no \p{...}).
_SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")
_WANTED = ("tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.merges")


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's bytes -> printable characters (printable bytes map to themselves)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


_BYTES = _byte_alphabet()


class BpeCounter:
    """`count(text)`: how many tokens the vocabulary makes of `text`."""

    def __init__(self, merges: list[str], source: str) -> None:
        self.source = source
        self.ranks: dict[tuple[str, str], int] = {}
        for i, m in enumerate(merges):
            a, _, b = m.partition(" ")
            if a and b:
                self.ranks.setdefault((a, b), i)
        self._piece = lru_cache(maxsize=1 << 16)(self._piece_tokens)

    def _piece_tokens(self, piece: str) -> int:
        word = [_BYTES[b] for b in piece.encode("utf-8")]
        while len(word) > 1:
            pairs = [(self.ranks.get((word[i], word[i + 1])), i) for i in range(len(word) - 1)]
            ranked = [(r, i) for r, i in pairs if r is not None]
            if not ranked:
                break
            best = min(ranked)[0]
            a_b = next((word[i], word[i + 1]) for r, i in ranked if r == best)
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == a_b:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        return len(word)

    def count(self, text: str) -> int:
        return sum(self._piece(p) for p in _SPLIT.findall(text))


def _gguf_vocab(path: Path) -> dict[str, Any]:
    """The tokenizer fields of a GGUF header (their string arrays kept)."""
    fields = read_header(path, keep_strings=frozenset(_WANTED)).fields
    return {k: fields[k] for k in _WANTED if k in fields}


def load_counter(path: Path) -> BpeCounter:
    """A counter from a .gguf or a tokenizer.json; SpecError naming the file otherwise."""
    if not path.is_file():
        raise SpecError(f"--tokenizer {path}: no such file")
    if path.suffix == ".gguf":
        try:
            v = _gguf_vocab(path)
        except (GGUFHeaderError, ValueError, OSError) as e:
            raise SpecError(f"--tokenizer {path}: not a readable GGUF ({e})") from e
        kind = v.get("tokenizer.ggml.model")
        if kind != "gpt2" or not v.get("tokenizer.ggml.merges"):
            raise SpecError(
                f"--tokenizer {path}: its vocabulary is {kind!r}, not byte-level BPE (gpt2); "
                "give the model's tokenizer.json, or a server with /tokenize"
            )
        return BpeCounter(list(v["tokenizer.ggml.merges"]), f"{path.name} (GGUF BPE)")
    try:
        model = json.loads(path.read_text(encoding="utf-8")).get("model", {})
    except (ValueError, OSError, AttributeError) as e:
        raise SpecError(f"--tokenizer {path}: not a tokenizer.json ({e})") from e
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise SpecError(f"--tokenizer {path}: not a BPE tokenizer.json")
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return BpeCounter(merges, f"{path.name} (tokenizer.json BPE)")
