"""A sliding window of scrapes: rates come from differencing its two ends, never since-start.

A counter that goes down means the server restarted: everything before the
restart is dropped, so no rate ever spans a reset.
"""

from __future__ import annotations

from collections import deque

from inferlab.servermetrics.snapshot import Snapshot, delta


class SnapshotWindow:
    """The scrapes of the last `window_s` seconds (plus the one just before, to span it all)."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._snaps: deque[Snapshot] = deque()
        self.resets = 0  # server restarts seen so far

    def add(self, snap: Snapshot) -> bool:
        """Append a scrape; returns True when it shows a restart (the window starts afresh)."""
        reset = bool(self._snaps) and (
            delta(self._snaps[-1], snap).reset or snap.dialect != self._snaps[-1].dialect
        )
        if reset:
            self._snaps.clear()
            self.resets += 1
        self._snaps.append(snap)
        # Keep the newest scrape at or before the window's start, so the window spans window_s.
        start = snap.t_mono_s - self.window_s
        while len(self._snaps) >= 2 and self._snaps[1].t_mono_s <= start:
            self._snaps.popleft()
        return reset

    def clear(self) -> None:
        self._snaps.clear()

    @property
    def snapshots(self) -> tuple[Snapshot, ...]:
        return tuple(self._snaps)

    def __len__(self) -> int:
        return len(self._snaps)
