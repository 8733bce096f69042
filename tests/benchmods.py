"""A benchmark script (benchmarks/<name>.py) as a module, for the tests of its functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def benchmark_module(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """benchmarks/<name>.py as a module (registered for the test only: its dataclasses
    look their module up)."""
    path = Path(__file__).parent.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, mod)
    spec.loader.exec_module(mod)
    return mod
