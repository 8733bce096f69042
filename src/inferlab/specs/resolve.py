"""A model by name: a preset, a config.json / model folder, or a .gguf file.

Its own module so that `specs.model` and `specs.gguf_file` (which builds a
`ModelSpec`) do not import each other. `gguf_file` (and the `gguf` package and numpy
behind it) is imported only when a .gguf file is named, so a preset starts quickly.
"""

from __future__ import annotations

import os

from inferlab.errors import SpecError
from inferlab.specs.model import ModelSpec, from_hf_config, load_preset


def resolve_model(name_or_path: str) -> ModelSpec:
    """A preset name, a config.json / model folder, or a .gguf file. (os.path, not pathlib:
    a preset, the common case, then starts without pathlib's imports, ~3.5 ms.)"""
    path = os.path.expanduser(name_or_path)
    if name_or_path.lower().endswith(".gguf"):
        from pathlib import Path

        from inferlab.specs.gguf_file import from_gguf

        return from_gguf(Path(path))
    if os.path.exists(path):
        from pathlib import Path

        return from_hf_config(Path(path))
    if "/" in name_or_path or name_or_path.endswith(".json"):
        raise SpecError(f"{name_or_path}: no such file or folder")
    return load_preset(name_or_path)
