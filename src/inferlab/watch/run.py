"""The watch loop: one scrape per interval, fanned out to the record, exporter, page and terminal.

The first scrape is strict (an unreachable URL, no /metrics or an unknown
dialect is one clear error before anything starts); later failures become
"down since" frames and the loop keeps going until --duration or Ctrl-C.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from inferlab.watch.derive import Physics
from inferlab.watch.frame import Frame, Scrape, UtilProbe, Watcher
from inferlab.watch.record import Header, Recorder


@dataclass(frozen=True, slots=True)
class WatchConfig:
    url: str  # the server, as the user named it (shown in every view)
    interval_s: float = 1.0
    window_s: float = 10.0
    duration_s: float | None = None
    record: Path | None = None
    web_port: int | None = None
    prometheus_port: int | None = None
    tui: bool = True


class Clock(Protocol):
    """What the loop reads time from and sleeps on: `time` itself; a test passes a fake."""

    def monotonic(self) -> float: ...
    def sleep(self, seconds: float, /) -> None: ...


class Sink(Protocol):
    def publish(self, frame: Frame) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class WatchResult:
    frames: int
    record_lines: int
    interrupted: bool


class _Outputs:
    """Everything a frame goes to; opened in order, closed in reverse, even after an error."""

    def __init__(self) -> None:
        self.sinks: list[Any] = []
        self.recorder: Recorder | None = None
        self.view: Any = None

    def publish(self, frame: Frame) -> None:
        if self.recorder is not None:
            self.recorder.write(frame)
        for s in self.sinks:
            s.publish(frame)
        if self.view is not None:
            self.view.update(frame)

    def close(self) -> None:
        if self.view is not None:
            self.view.__exit__(None, None, None)
        for s in reversed(self.sinks):
            s.close()
        if self.recorder is not None:
            self.recorder.close()


class _ExporterSink:
    def __init__(self, port: int, header: Header) -> None:
        from inferlab.watch.exporter import Exporter

        self.exporter = Exporter(port, header.model, header.hardware)
        self.port = self.exporter.port

    def publish(self, frame: Frame) -> None:
        self.exporter.update(frame)

    def close(self) -> None:
        self.exporter.close()


def _open(cfg: WatchConfig, header: Header, out: _Outputs, log: Any) -> None:
    if cfg.prometheus_port is not None:
        ex = _ExporterSink(cfg.prometheus_port, header)
        out.sinks.append(ex)
        print(f"prometheus: http://127.0.0.1:{ex.port}/metrics", file=log, flush=True)
    if cfg.web_port is not None:
        from inferlab.watch.web import WebPage

        page = WebPage(cfg.web_port, header)
        out.sinks.append(page)
        print(f"web page: {page.url}", file=log, flush=True)
    if cfg.record is not None:
        out.recorder = Recorder(cfg.record, header)
        print(f"recording: {cfg.record}", file=log, flush=True)
    if cfg.tui:
        from inferlab.watch.tui import TerminalView

        out.view = TerminalView(header).__enter__()


def _headless_line(frame: Frame, log: Any) -> None:
    stamp = time.strftime("%H:%M:%S", time.localtime(frame.t_unix_s))
    print(f"{stamp} {frame.reading}", file=log, flush=True)


def run_watch(
    cfg: WatchConfig,
    physics: Physics,
    scrape: Scrape,
    util: UtilProbe,
    log: Any = None,
    clock: Clock = time,
) -> WatchResult:
    """Scrape every interval until the duration ends or Ctrl-C; always flush and close."""
    log = log or sys.stderr
    first = scrape()  # strict: a bad URL or dialect fails here, before anything is opened
    watcher = Watcher(scrape, physics, cfg.window_s, util)
    watcher.window.add(first)
    header = Header.of(cfg.url, physics, cfg.interval_s, cfg.window_s, first.t_unix_s)
    out = _Outputs()
    frames, interrupted = 0, False
    try:
        _open(cfg, header, out, log)
        start = clock.monotonic()
        last_line, last_up = 0.0, True
        while cfg.duration_s is None or clock.monotonic() - start < cfg.duration_s:
            # An absolute schedule: a slow scrape does not push every later one back.
            due = start + (frames + 1) * cfg.interval_s
            clock.sleep(max(0.0, due - clock.monotonic()))
            frame = watcher.tick()
            frames += 1
            out.publish(frame)
            if not cfg.tui and (
                frame.up != last_up or clock.monotonic() - last_line >= cfg.window_s
            ):
                _headless_line(frame, log)
                last_line, last_up = clock.monotonic(), frame.up
    except KeyboardInterrupt:
        interrupted = True
    finally:
        lines = out.recorder.lines if out.recorder else 0
        out.close()
    return WatchResult(frames, lines, interrupted)
