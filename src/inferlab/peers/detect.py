"""Which tool wrote a file, told by its content alone (no flag names the tool), then read.

JSON first (one object or array), then JSON Lines, then AIPerf's CSV, then YAML (guidellm).
A file no reader recognises, one cut short, or one of a newer schema is refused with one
line naming the file, what is wrong, and the formats accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.peers import aiperf, aiperf_runs, guidellm, llamacpp, sglang, vllm
from inferlab.peers.common import PeerFormatError, PeerRun, file_text, json_lines


def _keys(data: object) -> str:
    if isinstance(data, dict):
        shown = sorted(str(k) for k in data)[:6]
        return f"unknown keys ({', '.join(shown) or 'none'})"
    return f"a JSON {type(data).__name__}, not an object"


def _one_document(path: Path, data: object, text: str) -> PeerRun:
    if aiperf_runs.looks_like_aggregate(data):  # before a record: it holds metadata, metrics
        return aiperf_runs.read_aggregate(path, data)
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
    text = file_text(path)
    if aiperf.looks_like_csv(text):
        return aiperf.read_csv(path, text)
    stripped = text.lstrip()
    if stripped[:1] in "{[":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            rows = json_lines(path, text) if stripped[:1] == "{" else None
            if not rows or len(rows) < 2:
                raise _json_error(path, e) from None
            return _json_lines(path, rows, text)
        return _one_document(path, data, text)
    return guidellm.read_yaml(path, text)
