"""Fetch a server's /metrics and turn it into a Snapshot, or say exactly why not.

Every failure is a typed `MetricsError` whose `warning_code` is the bench's
warning (`no_server_metrics` for 404 / disabled / unreachable / timeout,
`metrics_unparsable` for HTML or garbage): the caller records it and goes on.
A snapshot's time is the midpoint of the request on time.perf_counter (the
clock the bench stamps tokens with), because the server read its counters
somewhere between our send and its answer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from inferlab.httpbody import (
    MAX_METRICS_BYTES,
    AnswerTooSlow,
    BodyTooLarge,
    Unreachable,
    get_sync,
    read_bounded,
)
from inferlab.servermetrics.dialects import MetricsError, MetricsUnparsable, parse_metrics
from inferlab.servermetrics.snapshot import Snapshot

if TYPE_CHECKING:
    import aiohttp

MAX_BYTES = MAX_METRICS_BYTES  # a /metrics page is tens of kB; more is not a metrics page


class MetricsNotFound(MetricsError):
    """HTTP 404: the server has no /metrics (or it lives on another port/path)."""


class MetricsDisabled(MetricsError):
    """The server has /metrics but it is switched off (llama-server without --metrics: 501)."""


class MetricsTimeout(MetricsError):
    """No answer within the timeout."""


class MetricsUnreachable(MetricsError):
    """Connection refused or reset, DNS failure, other HTTP errors."""


class MetricsHTTPStatus(MetricsUnreachable):
    """An HTTP status other than 200/404/501: 5xx is a server not ready (503 while loading)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def classify(url: str, status: int, body: str, content_type: str) -> None:
    """Raise the typed error a non-metrics answer deserves; return for a 200 with text."""
    low = body[:500].lower()
    if status == 404:
        raise MetricsNotFound(f"{url} answered 404: this server publishes no /metrics there")
    if status == 501 or (status >= 400 and "metrics" in low and "support" in low):
        raise MetricsDisabled(
            f"{url} answered {status}: metrics are switched off "
            "(llama-server needs --metrics; SGLang --enable-metrics)"
        )
    if status != 200:
        raise MetricsHTTPStatus(f"{url} answered HTTP {status}: {body[:120]!r}", status)
    if "html" in content_type.lower():
        raise MetricsUnparsable(f"{url} answered HTML, not Prometheus text")


def snapshot_from(
    url: str, status: int, body: str, content_type: str, t0: float, histograms: bool = True
) -> Snapshot:
    classify(url, status, body, content_type)
    t1 = time.perf_counter()
    wall = time.time() - (t1 - t0) / 2
    try:
        return parse_metrics(body, (t0 + t1) / 2, wall, histograms)
    except MetricsError as e:
        raise type(e)(f"{url}: {e}") from e


async def fetch_snapshot(session: aiohttp.ClientSession, url: str, timeout_s: float) -> Snapshot:
    """GET url (a /metrics URL; see metrics_url) on an aiohttp session -> Snapshot."""
    import aiohttp

    t0 = time.perf_counter()
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=timeout_s)) as r:
            raw = await read_bounded(r, MAX_BYTES)
            status, ctype = r.status, r.headers.get("Content-Type", "")
    except BodyTooLarge as e:
        raise MetricsUnparsable(f"{e} (not a metrics page)") from e
    except TimeoutError as e:
        raise MetricsTimeout(f"{url} did not finish its answer within {timeout_s:g} s") from e
    except (aiohttp.ClientError, OSError) as e:
        raise MetricsUnreachable(f"cannot reach {url} ({type(e).__name__}: {e})") from e
    return snapshot_from(url, status, raw.decode("utf-8", "replace"), ctype, t0)


def scrape_once(url: str, timeout_s: float = 5.0, histograms: bool = True) -> Snapshot:
    """Synchronous GET of url (a /metrics URL; see metrics_url) -> Snapshot, the whole
    answer within timeout_s."""
    t0 = time.perf_counter()
    try:
        answer = get_sync(url, {}, MAX_BYTES, timeout_s)
    except BodyTooLarge as e:
        raise MetricsUnparsable(f"{e} (not a metrics page)") from e
    except AnswerTooSlow as e:
        raise MetricsTimeout(f"{url} did not finish its answer within {timeout_s:g} s") from e
    except Unreachable as e:
        raise MetricsUnreachable(str(e)) from e
    body = answer.body.decode("utf-8", "replace")
    return snapshot_from(url, answer.status, body, answer.content_type, t0, histograms)
