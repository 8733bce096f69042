"""The scrape `watch` calls each interval: the shared scraper, bound to one URL and timeout."""

from __future__ import annotations

from inferlab.servermetrics.scrape import scrape_once
from inferlab.servermetrics.snapshot import Snapshot
from inferlab.watch.frame import Scrape


def scraper(url: str, timeout_s: float) -> Scrape:
    """A no-argument callable returning a Snapshot or raising a MetricsError (one line)."""

    def scrape() -> Snapshot:
        return scrape_once(url, timeout_s)

    return scrape
