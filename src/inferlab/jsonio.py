"""Strict JSON, written in one place: no NaN/Infinity ever leaves inferlab.

Non-finite floats become `null` (the text output says why); dataclasses with a
`to_json()` method serialise through it; everything is checked with
`allow_nan=False`, so a value that slipped through is a bug, not bad JSON.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, NoReturn


def jsonable(obj: object) -> object:
    """A JSON-safe copy: non-finite floats -> None, tuples -> lists, to_json() objects expanded."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, bool | int | str):
        return obj
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "to_json"):
        return jsonable(obj.to_json())
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return jsonable(obj.item())
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def dumps(obj: object, indent: int | None = 2) -> str:
    """Strict JSON text (allow_nan=False after non-finite values became null)."""
    seps = (",", ":") if indent is None else None
    return json.dumps(jsonable(obj), indent=indent, allow_nan=False, separators=seps)


def dumps_line(obj: object) -> str:
    """One compact JSON line (for JSONL files), strict."""
    return dumps(obj, indent=None) + "\n"


def write_json(path: Path, obj: object) -> None:
    """Write atomically: a reader never sees half a file."""
    write_text_atomic(path, dumps(obj) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Written beside PATH, then renamed onto it: a reader sees no file or all of TEXT."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"non-standard JSON constant {name}")


def loads_strict(text: str) -> Any:
    """Parse JSON, refusing NaN/Infinity (for tests and for reading our own files)."""
    return json.loads(text, parse_constant=_reject_constant)
