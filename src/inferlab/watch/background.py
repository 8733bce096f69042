"""Watch beside another job (the demo's sweep): record frames from a daemon thread, keep the last.

The scrapes run off the bench's event loop, in their own thread, at a modest
rate; a scrape that fails is a "down" frame like any other, never an error
for the job being watched.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from inferlab.physics.floor import Floor
from inferlab.watch.devutil import probe_for
from inferlab.watch.frame import Frame, Watcher
from inferlab.watch.record import Header, Recorder
from inferlab.watch.scraping import scraper


class BackgroundWatch:
    """`with BackgroundWatch(url, physics, record) as w: ...` (w.latest); flushes on exit."""

    def __init__(
        self,
        url: str,
        physics: Floor,
        record: Path,
        interval_s: float = 1.0,
        window_s: float = 5.0,
    ) -> None:
        from inferlab.address import metrics_url

        self.interval_s = interval_s
        self.watcher = Watcher(scraper(metrics_url(url), 2.0), physics, window_s, probe_for(url))
        self.header = Header.of(url, physics, interval_s, window_s, time.time())
        self.record = record
        self.latest: Frame | None = None
        self.frames = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="inferlab-watch", daemon=True)

    def _loop(self) -> None:
        rec = Recorder(self.record, self.header)
        try:
            start = time.monotonic()
            while not self._stop.is_set():
                frame = self.watcher.tick()
                rec.write(frame)
                self.latest, self.frames = frame, self.frames + 1
                due = start + self.frames * self.interval_s
                self._stop.wait(max(0.0, due - time.monotonic()))
        finally:
            rec.close()

    def __enter__(self) -> BackgroundWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def status(self) -> str:
        """A short live line: MBU, steps/s and running batch, or why not."""
        f = self.latest
        if f is None or f.live is None:
            return "watch: waiting" if f is None or f.up else "watch: server down"
        lv = f.live
        mbu = f"MBU {lv.mbu.value:.0%}" if lv.mbu.value is not None else "MBU ?"
        sps = f"{lv.steps_per_s.value:.1f} steps/s" if lv.steps_per_s.value is not None else ""
        run = f"batch {lv.running.value:.1f}" if lv.running.value is not None else ""
        return "watch: " + ", ".join(x for x in (mbu, sps, run) if x)
