"""The catalogues shipped beside the code (data/models.toml, data/hardware.toml).

Read as plain files, with neither importlib.resources nor pathlib: either would add
milliseconds to the start of every verb that names a preset or a chip. A catalogue once
parsed is kept as marshal beside this user's other inferlab caches, keyed by the file's size,
modification time and the interpreter (as Python keeps its bytecode): the next start reads
it without importing tomllib (and datetime behind it), ~3 ms of every physics verb's start.
A cache that cannot be read or written is passed over: the TOML is always the truth.
"""

from __future__ import annotations

import marshal
import os
import sys
from typing import Any

_DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def cache_base() -> str:
    """inferlab's cache folder: $INFERLAB_CACHE_DIR, else $XDG_CACHE_HOME/inferlab, else
    ~/.cache/inferlab."""
    return os.environ.get("INFERLAB_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "inferlab"
    )


def _cached_path(name: str, path: str) -> str:
    st = os.stat(path)
    tag = sys.implementation.cache_tag or "python"
    key = f"{name}.{st.st_size}.{st.st_mtime_ns}.{tag}.marshal"
    return os.path.join(cache_base(), "catalogues", key)


def _parse(path: str) -> dict[str, Any]:
    import tomllib

    with open(path, encoding="utf-8") as f:
        return tomllib.loads(f.read())


def _write(cached: str, data: dict[str, Any]) -> None:
    """Atomically (a reader sees no file or all of it); a read-only home is fine."""
    try:
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        tmp = f"{cached}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            marshal.dump(data, f)
        os.replace(tmp, cached)
    except OSError:
        pass


def read_catalogue(name: str) -> dict[str, Any]:
    """data/NAME parsed as TOML: one table per entry, each with its source."""
    path = os.path.join(_DATA_DIR, name)
    cached = _cached_path(name, path)
    try:
        with open(cached, "rb") as f:
            data = marshal.load(f)
        if isinstance(data, dict):
            return data
    except (OSError, EOFError, ValueError, TypeError):
        pass
    data = _parse(path)
    _write(cached, data)
    return data
