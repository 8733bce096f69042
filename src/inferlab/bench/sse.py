"""Incremental Server-Sent Events parser.

Feeds on raw bytes as they arrive; splits on blank lines at the byte level, so
an event split across reads, or a UTF-8 character split mid-way, is only
decoded once it is complete. Tolerates CRLF and CR line endings, comments and
unknown fields, as the SSE specification asks.
"""

from __future__ import annotations

import re

_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LINE_END = re.compile(r"\r\n|\n|\r")


class SSEParser:
    def __init__(self) -> None:
        self._buf = b""
        self.malformed_lines = 0

    def feed(self, chunk: bytes) -> list[str]:
        """Return the `data` payloads of every event completed by this chunk."""
        self._buf += chunk
        out: list[str] = []
        while True:
            m = _EVENT_END.search(self._buf)
            if m is None:
                break
            raw, self._buf = self._buf[: m.start()], self._buf[m.end() :]
            data = self._parse_event(raw)
            if data is not None:
                out.append(data)
        return out

    def flush(self) -> list[str]:
        """At end of stream, an unterminated last event still counts."""
        raw, self._buf = self._buf, b""
        data = self._parse_event(raw) if raw.strip() else None
        return [data] if data is not None else []

    def _parse_event(self, raw: bytes) -> str | None:
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
