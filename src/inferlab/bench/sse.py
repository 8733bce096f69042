"""Incremental Server-Sent Events parser, linear in the bytes and bounded in memory.

Feeds on raw bytes as they arrive; splits on blank lines at the byte level, so
an event split across reads, or a UTF-8 character split mid-way, is only
decoded once it is complete. Tolerates CRLF and CR line endings, comments and
unknown fields, as the SSE specification asks.

Cost: the search for an event's end resumes where the last one stopped (less
the 3 bytes a 4-byte terminator may straddle), so no byte is scanned twice and
a long event fed in many small reads costs what it would in one.
Memory: an event longer than `max_event_bytes` raises `EventTooLong` as soon as
its unfinished bytes pass the bound, so the buffer never holds more than the
bound plus one read. A server that streams an endless line ends that request
(the client records it as `malformed_stream`), not the client.
"""

from __future__ import annotations

import re

from inferlab.errors import InferlabError

DEFAULT_MAX_EVENT_BYTES = 1 << 20  # one SSE event; a token's JSON is a few hundred bytes
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LONGEST_END = 4  # len(b"\r\n\r\n"): a terminator can straddle two reads by 3 bytes
_LINE_END = re.compile(r"\r\n|\n|\r")


class EventTooLong(InferlabError):
    """One SSE event grew past the parser's bound (no blank line after max_event_bytes)."""

    def __init__(self, event_bytes: int, max_event_bytes: int) -> None:
        super().__init__(
            f"an SSE event reached {event_bytes} bytes without ending (bound: "
            f"{max_event_bytes} bytes, --max-event-bytes)"
        )
        self.event_bytes = event_bytes
        self.max_event_bytes = max_event_bytes


class SSEParser:
    """`feed(chunk)` -> completed `data` payloads; `flush()` at end of stream.

    `scanned_bytes` counts the bytes the terminator search examined (its cost);
    `scan_pos` is where the next search starts in the unfinished event.
    """

    def __init__(self, max_event_bytes: int | None = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._buf = bytearray()  # the unfinished event (bytes after the last terminator)
        self.scan_pos = 0  # bytes of _buf already searched for a terminator
        self.scanned_bytes = 0
        self.max_event_bytes = max_event_bytes
        self.malformed_lines = 0

    @property
    def pending_bytes(self) -> int:
        """Bytes held for the event not yet ended (bounded by max_event_bytes + one read)."""
        return len(self._buf)

    def feed(self, chunk: bytes) -> list[str]:
        """Return the `data` payloads of every event completed by this chunk."""
        if self._buf:
            self._buf += chunk
            data: bytes | bytearray = self._buf
        else:
            data = chunk  # the common case (events end where reads end): no copy at all
        pos = max(0, self.scan_pos - (_LONGEST_END - 1))  # resume: never rescan the event
        self.scanned_bytes += len(data) - pos  # the searches below cover pos..end once
        out: list[str] = []
        start = 0  # first byte of the event being looked for
        bound = self.max_event_bytes
        while (m := _EVENT_END.search(data, pos)) is not None:
            if bound is not None and m.start() - start > bound:
                raise EventTooLong(m.start() - start, bound)
            payload = self._parse_event(data[start : m.start()])
            if payload is not None:
                out.append(payload)
            start = pos = m.end()
        if data is chunk:
            if start < len(chunk):
                self._buf = bytearray(chunk[start:])  # the unfinished event, copied once
        elif start:
            del self._buf[:start]  # each byte moves at most once: the next delete ends its event
        self.scan_pos = len(self._buf)
        if bound is not None and self.scan_pos > bound:
            raise EventTooLong(self.scan_pos, bound)
        return out

    def flush(self) -> list[str]:
        """At end of stream, an unterminated last event still counts."""
        raw = bytes(self._buf)
        self._buf.clear()
        self.scan_pos = 0
        data = self._parse_event(raw) if raw.strip() else None
        return [data] if data is not None else []

    def _parse_event(self, raw: bytes | bytearray) -> str | None:
        text = raw.decode("utf-8", errors="replace")
        data_lines: list[str] = []
        for line in _LINE_END.split(text):
            if not line or line.startswith(":"):
                continue  # blank or comment (keep-alive)
            field, sep, value = line.partition(":")
            if not sep:
                self.malformed_lines += 1
                continue
            if value.startswith(" "):
                value = value[1:]
            if field == "data":
                data_lines.append(value)
            elif field not in ("event", "id", "retry"):
                self.malformed_lines += 1
        return "\n".join(data_lines) if data_lines else None
