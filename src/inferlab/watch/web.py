"""--web PORT: one self-contained live page on 127.0.0.1, polled as JSON (no CDN, no internet).

The page (page.html beside this module) draws its gauges and time series in
hand-written SVG and asks `/frames?since=N` once per interval for what is new.
The server is the standard library's threading HTTP server: a page for one
person on this machine needs nothing more.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlparse

from inferlab.errors import InferlabError
from inferlab.jsonio import dumps
from inferlab.watch.frame import Frame
from inferlab.watch.record import Header

KEEP_FRAMES = 3600  # an hour at 1 s: enough history for the page's charts


def page_html() -> str:
    return resources.files("inferlab.watch").joinpath("page.html").read_text(encoding="utf-8")


def compact(frame: Frame) -> dict[str, Any]:
    """What the page draws: values and bases of the live quantities, status, reading."""
    live = frame.live.to_json() if frame.live else {}
    return {
        "t_unix_s": frame.t_unix_s,
        "up": frame.up,
        "down_since_unix_s": frame.down_since_unix_s,
        "error": frame.error,
        "reading": frame.reading,
        "device_util": frame.device_util.to_json(),
        "device_util_kind": frame.device_util_kind,
        "dialect": frame.snapshot.dialect if frame.snapshot else None,
        "live": live,
    }


class Feed:
    """Frames numbered in arrival order; the page asks for those after the last it has."""

    def __init__(self, header: Header) -> None:
        self.header = header
        self._lock = threading.Lock()
        self._frames: deque[tuple[int, dict[str, Any]]] = deque(maxlen=KEEP_FRAMES)
        self._seq = 0

    def publish(self, frame: Frame) -> None:
        c = compact(frame)
        with self._lock:
            self._seq += 1
            self._frames.append((self._seq, c))

    def since(self, seq: int) -> dict[str, Any]:
        with self._lock:
            new = [dict(f, seq=s) for s, f in self._frames if s > seq]
            last = self._seq
        return {"seq": last, "header": self.header.to_json(), "frames": new}


def _handler(feed: Feed) -> type[BaseHTTPRequestHandler]:
    page = page_html().encode("utf-8")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            u = urlparse(self.path)
            if u.path in ("/", "/index.html"):
                self._send(200, "text/html; charset=utf-8", page)
            elif u.path == "/frames":
                try:
                    seq = int(parse_qs(u.query).get("since", ["0"])[0])
                except ValueError:
                    seq = 0
                body = dumps(feed.since(seq), indent=None).encode("utf-8")
                self._send(200, "application/json", body)
            else:
                self._send(404, "text/plain", b"not found\n")

        def _send(self, code: int, ctype: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # the terminal belongs to the live view

    return Handler


class WebPage:
    """Serves the page and its feed from a daemon thread until close()."""

    def __init__(self, port: int, header: Header, host: str = "127.0.0.1") -> None:
        self.feed = Feed(header)
        try:
            self.server = ThreadingHTTPServer((host, port), _handler(self.feed))
        except OSError as e:
            raise InferlabError(
                f"--web {port}: cannot listen on {host}:{port} ({e.strerror}); choose a free port"
            ) from e
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}/"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def publish(self, frame: Frame) -> None:
        self.feed.publish(frame)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
