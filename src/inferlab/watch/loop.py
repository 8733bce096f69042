"""The watch loop: one scrape per interval, fanned out to the record, exporter, page and terminal.

A server that is not up yet, or slow to answer its first scrape (timeout,
connection refused, HTTP 503 while it loads), is waited for: each interval
without an answer is a "waiting for the server since ..." frame, shown and
recorded as down, until it answers, or --start-timeout (or --duration) passes:
then one line, exit 2. A server that answers wrongly (no /metrics, metrics
off, an unknown dialect) is one clear error at once. After the first answer,
failures become "down since" frames and the loop goes on until --duration or
Ctrl-C. Time comes from a WatchClock, so tests drive the schedule themselves.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from inferlab.errors import InferlabError
from inferlab.physics.floor import Floor
from inferlab.servermetrics.scrape import MetricsHTTPStatus, MetricsTimeout, MetricsUnreachable
from inferlab.servermetrics.snapshot import Snapshot
from inferlab.watch.frame import Frame, Scrape, UtilProbe, Watcher
from inferlab.watch.record import Header, Recorder
from inferlab.watch.served import ServerNotUp

DEFAULT_START_TIMEOUT_S = 60.0
# The floor's figures, or how to get them once the server answers (the model it names).
FloorSource = Floor | Callable[[], Floor]


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
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S  # wait this long for a first answer


class WatchClock(Protocol):
    """Where the loop's time comes from: the system's, or a test's."""

    def monotonic(self) -> float: ...
    def time(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True, slots=True)
class WatchResult:
    frames: int
    record_lines: int
    interrupted: bool
    waited_s: float = 0.0  # how long the first answer took to come


def not_up(e: BaseException) -> bool:
    """A server not up yet or slow (wait for it), as opposed to one that answered wrongly."""
    if isinstance(e, MetricsHTTPStatus):
        return e.status >= 500  # 503 while loading the model
    return isinstance(e, MetricsTimeout | MetricsUnreachable | ServerNotUp)


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


def _open(cfg: WatchConfig, header: Header, out: _Outputs, log: IO[str]) -> None:
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


def _headless_line(frame: Frame, log: IO[str]) -> None:
    stamp = time.strftime("%H:%M:%S", time.localtime(frame.t_unix_s))
    print(f"{stamp} {frame.reading}", file=log, flush=True)


def _hhmmss(t_unix_s: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t_unix_s))


class _Run:
    """One watch: tick k is due at start + k * interval on `clock`; the outputs open as soon
    as the physics is known (at once when the model is given), so a wait is recorded too."""

    def __init__(
        self,
        cfg: WatchConfig,
        physics: FloorSource,
        util: UtilProbe,
        log: IO[str],
        clock: WatchClock,
    ) -> None:
        self.cfg, self.util, self.log, self.clock = cfg, util, log, clock
        self.physics = physics if isinstance(physics, Floor) else None
        self._resolve = physics
        self.out: _Outputs | None = None
        self.pending: list[Frame] = []  # waiting frames before the physics (header) is known
        self.start = clock.monotonic()
        self.since_unix_s = clock.time()
        self.ticks = self.frames = 0
        self.waited_s = 0.0
        self._last_line, self._last_up = float("-inf"), True

    def expired(self) -> bool:
        d = self.cfg.duration_s
        return d is not None and self.clock.monotonic() - self.start >= d

    def sleep_to_next_tick(self) -> None:
        """An absolute schedule; a tick already missed (a slow scrape) is skipped, not burst."""
        now, step = self.clock.monotonic(), self.cfg.interval_s
        self.ticks = max(self.ticks + 1, math.ceil((now - self.start) / step))
        self.clock.sleep(max(0.0, self.start + self.ticks * step - now))

    def publish(self, frame: Frame) -> None:
        self.frames += 1
        if self.out is None:
            self.pending.append(frame)
        else:
            self.out.publish(frame)
        now = self.clock.monotonic()
        headless = not self.cfg.tui or self.out is None or self.out.view is None
        if headless and (frame.up != self._last_up or now - self._last_line >= self.cfg.window_s):
            _headless_line(frame, self.log)
            self._last_line, self._last_up = now, frame.up

    def open(self) -> Floor:
        """Open the outputs (once) with the header; the frames waited so far go first."""
        assert self.physics is not None
        if self.out is None:
            cfg = self.cfg
            header = Header.of(
                cfg.url, self.physics, cfg.interval_s, cfg.window_s, self.since_unix_s
            )
            self.out = _Outputs()
            _open(cfg, header, self.out, self.log)
            for frame in self.pending:
                self.out.publish(frame)
            self.pending.clear()
        return self.physics

    def first_answer(self, scrape: Scrape) -> Snapshot:
        """Try every interval until the server answers; give up after the start timeout."""
        while True:
            try:
                if self.physics is None and callable(self._resolve):
                    self.physics = self._resolve()
                snap = scrape()
                self.waited_s = self.clock.monotonic() - self.start
                return snap
            except InferlabError as e:
                if not not_up(e):
                    raise  # it answered, wrongly: waiting will not help
                self._give_up_after(e)
                if self.physics is not None:
                    self.open()
                self.publish(self._waiting_frame(e))
            self.sleep_to_next_tick()

    def _give_up_after(self, e: InferlabError) -> None:
        cfg = self.cfg
        limit, flag = cfg.start_timeout_s, "--start-timeout"
        if cfg.duration_s is not None and cfg.duration_s < limit:
            limit, flag = cfg.duration_s, "--duration"
        if self.clock.monotonic() - self.start >= limit:
            raise InferlabError(
                f"no answer from the server in {limit:g} s ({flag}), waiting since "
                f"{_hhmmss(self.since_unix_s)}; last try: {e}"
            ) from e

    def _waiting_frame(self, e: InferlabError) -> Frame:
        util, kind = self.util()
        since = self.since_unix_s
        return Frame(
            self.clock.time(), self.clock.monotonic(), False, since, str(e), False, None, None,
            util, kind, f"waiting for the server since {_hhmmss(since)}: {e}",
        )  # fmt: skip

    def close(self) -> int:
        """Close the outputs; the record's line count."""
        if self.out is None:
            return 0
        lines = self.out.recorder.lines if self.out.recorder else 0
        self.out.close()
        return lines


def run_watch(
    cfg: WatchConfig,
    physics: FloorSource,
    scrape: Scrape,
    util: UtilProbe,
    log: IO[str] | None = None,
    clock: WatchClock | None = None,
) -> WatchResult:
    """Wait for the server, then scrape every interval until the duration ends or Ctrl-C;
    always flush and close. `physics` may be a callable that needs the server (the model
    it names): it is tried with each scrape until both answer."""
    run = _Run(cfg, physics, util, log or sys.stderr, clock or SystemClock())
    interrupted = False
    try:
        first = run.first_answer(scrape)
        watcher = Watcher(scrape, run.open(), cfg.window_s, util)
        watcher.window.add(first)
        while not run.expired():
            run.sleep_to_next_tick()
            run.publish(watcher.tick())
    except KeyboardInterrupt:
        interrupted = True
    finally:
        lines = run.close()
    return WatchResult(run.frames, lines, interrupted, run.waited_s)
