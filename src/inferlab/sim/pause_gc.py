"""Pause Python's cyclic garbage collector around bulk work that makes no cycles.

The simulator and its record builder make hundreds of thousands of small
acyclic objects; the collector would rescan them again and again for nothing.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
