"""Pause Python's cyclic garbage collector around bulk work that makes no cycles.

The simulator and its record builder make hundreds of thousands of small
acyclic objects; the collector would rescan them again and again for nothing.
Objects the caller keeps (the records: 72,000 lists holding 14 million token
times an hour at 20 req/s) would still be scanned twice more, by the first
young collections after the pause, at about a quarter second each; with
`long_lived` they go straight to the oldest generation instead, which only a
full collection scans.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused(long_lived: bool = False) -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # freeze then unfreeze moves every tracked object into the oldest generation: two
        # list splices, no scan. Skipped when someone else has frozen objects (unfreeze
        # would undo that).
        if long_lived and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was:
            gc.enable()
