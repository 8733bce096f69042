"""Which tool wrote a file, told by its content alone (no flag names the tool), then read.

JSON first (one object or array), then JSON Lines, then AIPerf's CSV, then YAML (guidellm).
A file no reader recognises, one cut short, or one of a newer schema is refused with one
line naming the file, what is wrong, and the formats accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.peers import aiperf, guidellm, llamacpp, sglang, vllm
from inferlab.peers.common import PeerFormatError, PeerRun

MAX_BYTES = 1 << 30  # a peer's file this large is no benchmark result


def _text(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_BYTES:
            raise PeerFormatError(path, "over 1 GiB: not a benchmark result")
        raw = path.read_bytes()
    except OSError as e:
        raise PeerFormatError(path, f"cannot be read ({e.strerror or e})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise PeerFormatError(path, "not UTF-8 text (a binary file?)") from None
    if not text.strip():
        raise PeerFormatError(path, "empty")
    return text


def _keys(data: object) -> str:
    if isinstance(data, dict):
        shown = sorted(str(k) for k in data)[:6]
        return f"unknown keys ({', '.join(shown) or 'none'})"
    return f"a JSON {type(data).__name__}, not an object"


def _one_document(path: Path, data: object, text: str) -> PeerRun:
    if isinstance(data, dict) and (aiperf.looks_like_record(data) or "pl" in data):
        return _json_lines(path, [data], text)  # JSON Lines of one line
    if isinstance(data, dict) and "n_gen" in data:
        return _json_lines(path, [data], text)
    if sglang.looks_like(data):  # before vLLM: SGLang's lines hold vLLM's keys too
        return sglang.read_lines(path, [data])
    if vllm.looks_like(data):
        return vllm.read(path, data)
    if aiperf.looks_like_json(data):
        return aiperf.read_json(path, data)
    if guidellm.looks_like(data):
        return guidellm.read(path, data)
    if llamacpp.looks_batched(data):
        return llamacpp.read_batched(path, "\n".join(json.dumps(r) for r in data))
    if llamacpp.looks_bench(data):
        return llamacpp.read_bench(path, text)
    raise PeerFormatError(path, f"not a result this reads: {_keys(data)}")


def _lines(path: Path, text: str) -> list[object] | None:
    """Every non-blank line as JSON, or None when the first line is not JSON."""
    rows: list[object] = []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            if not rows:
                return None
            raise PeerFormatError(path, f"line {i + 1} is not JSON (cut short?)") from None
    return rows


def _json_lines(path: Path, rows: list[object], text: str) -> PeerRun:
    first = rows[0]
    if not all(isinstance(r, dict) for r in rows):
        raise PeerFormatError(path, "JSON lines that are not all objects")
    if aiperf.looks_like_record(first):
        return aiperf.read_jsonl(path, rows)
    if sglang.looks_like(first):
        return sglang.read_lines(path, rows)
    if vllm.looks_like(first):  # --append-result: one run a line
        return vllm.read_lines(path, rows)
    if llamacpp.looks_batched(rows):
        return llamacpp.read_batched(path, text)
    if llamacpp.looks_bench(rows):
        return llamacpp.read_bench(path, text)
    raise PeerFormatError(path, f"not a result this reads: line 1 has {_keys(first)}")


def _json_error(path: Path, e: json.JSONDecodeError) -> PeerFormatError:
    return PeerFormatError(
        path, f"not valid JSON at line {e.lineno} column {e.colno} ({e.msg}; cut short?)"
    )


def read_peer(path: Path) -> PeerRun:
    """The file as a PeerRun, whichever tool wrote it; PeerFormatError when none did."""
    text = _text(path)
    if aiperf.looks_like_csv(text):
        return aiperf.read_csv(path, text)
    stripped = text.lstrip()
    if stripped[:1] in "{[":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            rows = _lines(path, text) if stripped[:1] == "{" else None
            if not rows or len(rows) < 2:
                raise _json_error(path, e) from None
            return _json_lines(path, rows, text)
        return _one_document(path, data, text)
    return guidellm.read_yaml(path, text)
