"""The SSE parser survives events split across reads, split UTF-8, CRLF and junk."""

from __future__ import annotations

from inferlab.bench.sse import SSEParser

EVENTS = (
    'data: {"choices":[{"text":"é日本"}]}\n\n'
    ": keep-alive comment\n\n"
    'data: {"a":1}\r\n\r\n'
    "event: message\ndata: line1\ndata: line2\n\n"
    "data: [DONE]\n\n"
).encode()
EXPECTED = ['{"choices":[{"text":"é日本"}]}', '{"a":1}', "line1\nline2", "[DONE]"]


def test_whole_stream() -> None:
    assert SSEParser().feed(EVENTS) == EXPECTED


def test_every_split_point_gives_the_same_events() -> None:
    # Includes splits inside the multi-byte characters and inside "\r\n\r\n".
    for cut in range(1, len(EVENTS)):
        p = SSEParser()
        got = p.feed(EVENTS[:cut]) + p.feed(EVENTS[cut:])
        assert got == EXPECTED, cut


def test_byte_by_byte() -> None:
    p = SSEParser()
    got = [e for i in range(len(EVENTS)) for e in p.feed(EVENTS[i : i + 1])]
    assert got == EXPECTED


def test_malformed_lines_counted_not_fatal() -> None:
    p = SSEParser()
    got = p.feed(b"no colon here\n\ndata: ok\n\nweird: field\n\n")
    assert got == ["ok"]
    assert p.malformed_lines == 2


def test_unterminated_last_event_flushed() -> None:
    p = SSEParser()
    assert p.feed(b"data: tail") == []
    assert p.flush() == ["tail"]
