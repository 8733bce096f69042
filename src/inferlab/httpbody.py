"""Reading an HTTP answer up to a stated size and within a stated time, so that no server
can make the client hold an unbounded answer in memory, or wait on one forever.

Every non-streamed body inferlab reads (`/v1/models`, `/props`, `/tokenize`,
error bodies, `/metrics`) goes through `read_bounded` (aiohttp) or `get_sync`
(blocking); a body past its bound is one `BodyTooLarge` naming the URL and the
bound, raised as soon as the bound is passed (or at once when Content-Length
already says so). The streamed SSE body has its own per-event bound (bench/sse.py).

Time: a per-read timeout does not bound an answer that trickles (a byte every
0.2 s keeps every read short and the whole answer endless), so each request has
a deadline on the whole answer: aiohttp's `ClientTimeout(total=...)` on the
async side, and on the blocking side `get_sync`'s watchdog, which shuts the
socket when the deadline passes and raises `AnswerTooSlow`.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from inferlab.errors import ServerError

if TYPE_CHECKING:
    import aiohttp

# The bounds, each far above what a working server sends.
MAX_JSON_BYTES = 8 << 20  # /v1/models, /props (a chat template, settings): a few kB
MAX_ERROR_BYTES = 64 << 10  # an HTTP error body: only its start is shown
MAX_METRICS_BYTES = 16 << 20  # a /metrics page is tens of kB (vLLM with histograms ~100 kB)
_READ_BYTES = 1 << 16
# The whole answer to a request around a level (models, props, tokenize, a chat check):
# a working server answers in milliseconds; bench's --request-timeout lowers it.
QUERY_DEADLINE_S = 15.0


def query_deadline_s(request_timeout_s: float | None) -> float:
    """The deadline of a request around the levels: QUERY_DEADLINE_S, or the run's request
    deadline where that is shorter."""
    if request_timeout_s is None:
        return QUERY_DEADLINE_S
    return min(QUERY_DEADLINE_S, request_timeout_s)


def tokenize_limit_bytes(text: str) -> int:
    """/tokenize's bound for `text`: every token is at least one byte of it, and a token id
    in a JSON list takes at most 12 bytes, so 16 bytes per text byte plus 1 MiB is ample."""
    return (1 << 20) + 16 * len(text.encode("utf-8"))


class BodyTooLarge(ServerError):
    """A server sent more than the bound stated for that body."""

    def __init__(self, url: str, limit_bytes: int) -> None:
        super().__init__(
            f"{url} sent a body of more than {limit_bytes} bytes (the bound for it); "
            "stopped reading: is that the server you meant?"
        )
        self.url = url
        self.limit_bytes = limit_bytes


async def read_bounded(resp: aiohttp.ClientResponse, limit_bytes: int) -> bytes:
    """The whole body of an aiohttp response, or BodyTooLarge once it passes limit_bytes."""
    url = str(resp.url)
    if resp.content_length is not None and resp.content_length > limit_bytes:
        raise BodyTooLarge(url, limit_bytes)
    buf = bytearray()
    while True:
        chunk = await resp.content.read(min(_READ_BYTES, limit_bytes + 1 - len(buf)))
        if not chunk:
            return bytes(buf)
        buf += chunk
        if len(buf) > limit_bytes:
            raise BodyTooLarge(url, limit_bytes)


class _Readable(Protocol):
    def read(self, amt: int, /) -> bytes: ...


def read_bounded_sync(fp: _Readable, url: str, limit_bytes: int) -> bytes:
    """The same for a file-like answer (urllib's response or HTTPError)."""
    buf = bytearray()
    while True:
        chunk = fp.read(min(_READ_BYTES, limit_bytes + 1 - len(buf)))
        if not chunk:
            return bytes(buf)
        buf += chunk
        if len(buf) > limit_bytes:
            raise BodyTooLarge(url, limit_bytes)


class AnswerTooSlow(ServerError):
    """A server that had not finished its answer by the request's deadline."""

    def __init__(self, url: str, deadline_s: float) -> None:
        super().__init__(
            f"{url} had not finished its answer after {deadline_s:g} s (the deadline for "
            "it); stopped waiting: is the server, or a proxy before it, stuck?"
        )
        self.url = url
        self.deadline_s = deadline_s


class Unreachable(ServerError):
    """No HTTP answer at all: refused, reset, or not an HTTP server."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    content_type: str
    body: bytes


class _Watchdog:
    """Shuts a connection's socket once its deadline passes, so a blocked read returns."""

    def __init__(self, conn: http.client.HTTPConnection, deadline_s: float) -> None:
        self.conn = conn
        self.fired = threading.Event()
        self._timer = threading.Timer(deadline_s, self._cut)
        self._timer.daemon = True
        self._timer.start()

    def _cut(self) -> None:
        self.fired.set()
        sock = self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed: nothing left to cut
                # the plain socket's shutdown (also under TLS): a blocked read returns
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()


def _connection(url: str, deadline_s: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Unreachable(f"{url} is not an http(s) URL")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return cls(parts.hostname, parts.port, timeout=deadline_s), path


def get_sync(url: str, headers: dict[str, str], limit_bytes: int, deadline_s: float) -> Answer:
    """GET `url` and its whole body (any status) within `deadline_s`: AnswerTooSlow past the
    deadline, BodyTooLarge past `limit_bytes`, Unreachable without an HTTP answer."""
    conn, path = _connection(url, deadline_s)
    dog = _Watchdog(conn, deadline_s)
    try:
        conn.connect()
        if dog.fired.is_set():  # the deadline passed while connecting (no socket to cut)
            raise AnswerTooSlow(url, deadline_s)
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = read_bounded_sync(resp, url, limit_bytes)
        if dog.fired.is_set():  # cut: what was read is not the whole answer
            raise AnswerTooSlow(url, deadline_s)
        return Answer(resp.status, resp.getheader("Content-Type") or "", body)
    except (OSError, http.client.HTTPException) as e:
        if dog.fired.is_set() or isinstance(e, TimeoutError):  # cut, or silent too long
            raise AnswerTooSlow(url, deadline_s) from e
        raise Unreachable(f"cannot reach {url} ({type(e).__name__}: {e})") from e
    finally:
        dog.cancel()
        conn.close()
