"""Reading an HTTP body up to a stated bound, so that no server can make the client hold an
unbounded answer in memory.

Every non-streamed body inferlab reads (`/v1/models`, `/props`, `/tokenize`,
error bodies, `/metrics`) goes through `read_bounded` (aiohttp) or
`read_bounded_sync` (urllib); a body past its bound is one `BodyTooLarge`
naming the URL and the bound, raised as soon as the bound is passed (or at
once when Content-Length already says so). The streamed SSE body has its own
per-event bound (bench/sse.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from inferlab.errors import ServerError

if TYPE_CHECKING:
    import aiohttp

# The bounds, each far above what a working server sends.
MAX_JSON_BYTES = 8 << 20  # /v1/models, /props (a chat template, settings): a few kB
MAX_ERROR_BYTES = 64 << 10  # an HTTP error body: only its start is shown
MAX_METRICS_BYTES = 16 << 20  # a /metrics page is tens of kB (vLLM with histograms ~100 kB)
_READ_BYTES = 1 << 16


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
