"""The catalogues shipped beside the code (data/models.toml, data/hardware.toml).

Read as plain files, with neither importlib.resources nor pathlib: either would add
milliseconds to the start of every verb that names a preset or a chip.
"""

from __future__ import annotations

import os
import tomllib
from typing import Any

_DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def read_catalogue(name: str) -> dict[str, Any]:
    """data/NAME parsed as TOML: one table per entry, each with its source."""
    with open(os.path.join(_DATA_DIR, name), encoding="utf-8") as f:
        return tomllib.loads(f.read())
