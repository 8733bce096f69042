"""A model by name: a preset, a config.json / model folder, or a .gguf file.

Its own module so that `specs.model` and `specs.gguf_file` (which builds a
`ModelSpec`) do not import each other. Importing `gguf_file` is cheap: the
`gguf` package (and numpy behind it) loads only when a file is read.
"""

from __future__ import annotations

from pathlib import Path

from inferlab.errors import SpecError
from inferlab.specs.gguf_file import from_gguf
from inferlab.specs.model import ModelSpec, from_hf_config, load_preset


def resolve_model(name_or_path: str) -> ModelSpec:
    """A preset name, a config.json / model folder, or a .gguf file."""
    path = Path(name_or_path).expanduser()
    if name_or_path.lower().endswith(".gguf"):
        return from_gguf(path)
    if path.exists():
        return from_hf_config(path)
    if "/" in name_or_path or name_or_path.endswith(".json"):
        raise SpecError(f"{name_or_path}: no such file or folder")
    return load_preset(name_or_path)
