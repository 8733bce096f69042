"""watch waits for a server that is slow or not up yet: each interval without an answer is a
"waiting for the server since ..." frame, shown and recorded as down; one that never answers
ends with one line after --start-timeout (or --duration). Time is a clock the test drives."""

from __future__ import annotations

import dataclasses
import io
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from inferlab.commands import watch as watch_cmd
from inferlab.errors import InferlabError
from inferlab.physics.floor import Floor
from inferlab.servermetrics.dialects import MetricsError
from inferlab.servermetrics.scrape import (
    MetricsHTTPStatus,
    MetricsNotFound,
    MetricsTimeout,
    MetricsUnreachable,
)
from inferlab.servermetrics.snapshot import Snapshot
from inferlab.watch import loop as run_mod
from inferlab.watch.frame import Frame
from inferlab.watch.loop import WatchConfig, run_watch
from inferlab.watch.record import read_record
from inferlab.watch.served import ServerNotUp
from tests.bench.bounded_app import serve
from tests.watch.helpers import FakeClock, physics, steady
from tests.watch.test_frame import no_util

METRICS = Path(__file__).parents[1] / "servermetrics/fixtures/llamacpp/metrics-after-load.txt"
REFUSED = "cannot reach http://127.0.0.1:9/metrics (connection refused)"


class Scraper:
    """Fails with `errors` first (each failure costing `cost_s` of the fake clock), then
    answers at once."""

    def __init__(self, clock: FakeClock, errors: list[MetricsError], cost_s: float = 0.0) -> None:
        self.clock, self.errors, self.cost_s = clock, list(errors), cost_s
        self.calls = 0

    def __call__(self) -> Snapshot:
        self.calls += 1
        if self.errors:
            self.clock.t += self.cost_s
            raise self.errors.pop(0)
        return steady(self.clock.t)


def _cfg(tmp_path: Path, **kw: Any) -> WatchConfig:
    base = WatchConfig(
        url="http://127.0.0.1:9", interval_s=1.0, window_s=10.0, record=tmp_path / "w.jsonl",
        tui=False, start_timeout_s=60.0,
    )  # fmt: skip
    return dataclasses.replace(base, **kw)


@pytest.mark.parametrize("n", [1, 3, 20])
def test_n_failures_are_n_down_intervals_then_data(tmp_path: Path, n: int) -> None:
    clock = FakeClock(500.0)
    errors: list[MetricsError] = [MetricsUnreachable(REFUSED)] * n
    log = io.StringIO()
    cfg = _cfg(tmp_path, duration_s=n + 3.0)
    res = run_watch(cfg, physics(), Scraper(clock, errors), no_util, log=log, clock=clock)
    header, frames = read_record(tmp_path / "w.jsonl")
    assert [f.up for f in frames] == [False] * n + [True] * 3
    assert res.frames == n + 3 and res.record_lines == 1 + n + 3 and not res.interrupted
    assert res.waited_s == n  # the first answer came n intervals after the start
    start_unix = 1.8e9 + 500.0
    assert header.started_unix_s == start_unix
    for f in frames[:n]:
        assert f.down_since_unix_s == start_unix and f.error == REFUSED
        assert f.reading.startswith("waiting for the server since ") and REFUSED in f.reading
        assert f.snapshot is None
    assert [f.t_mono_s for f in frames[:n]] == [500.0 + k for k in range(n)]
    live = frames[n].live
    assert live is not None and live.mbu.value == pytest.approx(0.44)  # data at once
    assert clock.sleeps == [1.0] * (n + 3)  # one absolute schedule through the wait
    lines = log.getvalue().splitlines()
    waiting = [x for x in lines if "waiting for the server since" in x]
    assert 1 <= len(waiting) == 1 + (n - 1) // 10  # once, then once per window while it lasts


def test_a_slow_first_scrape_is_waited_for(tmp_path: Path) -> None:
    # The run from the issue: "/metrics did not answer within 2 s" on a server just up.
    clock = FakeClock(500.0)
    slow = MetricsTimeout("http://127.0.0.1:9/metrics did not answer within 2 s")
    scraper = Scraper(clock, [slow, slow], cost_s=2.0)
    cfg = _cfg(tmp_path, duration_s=8.0)
    run_watch(cfg, physics(), scraper, no_util, log=io.StringIO(), clock=clock)
    _, frames = read_record(tmp_path / "w.jsonl")
    # Each failed try took 2 s of a 1 s interval: the ticks it overran are skipped, not
    # fired in a burst once it answers (which would stamp two frames at 504).
    assert [f.t_mono_s for f in frames] == [502.0, 504.0, 505.0, 506.0, 507.0, 508.0]
    assert [f.up for f in frames] == [False, False, True, True, True, True]


def test_never_answering_ends_with_one_line_after_the_start_timeout(tmp_path: Path) -> None:
    clock = FakeClock(500.0)
    scraper = Scraper(clock, [MetricsUnreachable(REFUSED)] * 1000)
    cfg = _cfg(tmp_path, start_timeout_s=5.0)
    with pytest.raises(InferlabError) as e:
        run_watch(cfg, physics(), scraper, no_util, log=io.StringIO(), clock=clock)
    msg = str(e.value)
    assert "\n" not in msg and "5 s (--start-timeout)" in msg and REFUSED in msg
    assert clock.t == 505.0 and scraper.calls == 6  # tries at 0..5 s of the fake clock
    _, frames = read_record(tmp_path / "w.jsonl")  # the gap was recorded, then closed
    assert len(frames) == 5 and not any(f.up for f in frames)


def test_a_shorter_duration_ends_the_wait(tmp_path: Path) -> None:
    clock = FakeClock(500.0)
    scraper = Scraper(clock, [MetricsUnreachable(REFUSED)] * 1000)
    cfg = _cfg(tmp_path, duration_s=3.0, start_timeout_s=60.0)
    with pytest.raises(InferlabError, match=r"3 s \(--duration\)"):
        run_watch(cfg, physics(), scraper, no_util, log=io.StringIO(), clock=clock)
    assert clock.t == 503.0


def test_zero_start_timeout_opens_nothing(tmp_path: Path) -> None:
    clock = FakeClock(500.0)
    cfg = _cfg(tmp_path, start_timeout_s=0.0)
    with pytest.raises(InferlabError, match="connection refused"):
        run_watch(cfg, physics(), Scraper(clock, [MetricsUnreachable(REFUSED)]), no_util,
                  log=io.StringIO(), clock=clock)  # fmt: skip
    assert not (tmp_path / "w.jsonl").exists() and clock.sleeps == []


@pytest.mark.parametrize(
    ("error", "waits"),
    [
        (MetricsHTTPStatus("http://x/metrics answered HTTP 503: 'Loading model'", 503), True),
        (MetricsHTTPStatus("http://x/metrics answered HTTP 403: 'no'", 403), False),
        (MetricsNotFound("http://x/metrics answered 404"), False),
        (MetricsError("unknown dialect"), False),
    ],
)
def test_only_a_server_not_up_is_waited_for(
    tmp_path: Path, error: MetricsError, waits: bool
) -> None:
    clock = FakeClock(500.0)
    cfg = _cfg(tmp_path, duration_s=3.0)
    scraper = Scraper(clock, [error])
    if waits:
        run_watch(cfg, physics(), scraper, no_util, log=io.StringIO(), clock=clock)
        _, frames = read_record(tmp_path / "w.jsonl")
        assert [f.up for f in frames] == [False, True, True]
    else:  # it answered, wrongly: one clear error at once, nothing opened
        with pytest.raises(MetricsError):
            run_watch(cfg, physics(), scraper, no_util, log=io.StringIO(), clock=clock)
        assert not (tmp_path / "w.jsonl").exists() and clock.sleeps == []


def test_the_served_model_is_waited_for_and_the_wait_recorded(tmp_path: Path) -> None:
    """No --model: the physics needs the server's /v1/models; the frames of the wait are
    kept until the header is known, then recorded first, in order."""
    clock = FakeClock(500.0)
    asked: list[float] = []

    def resolve() -> Floor:
        asked.append(clock.t)
        if len(asked) <= 2:
            raise ServerNotUp("no model given and http://127.0.0.1:9/v1/models did not list one")
        return physics()

    log = io.StringIO()
    cfg = _cfg(tmp_path, duration_s=4.0)
    run_watch(cfg, resolve, Scraper(clock, []), no_util, log=log, clock=clock)
    header, frames = read_record(tmp_path / "w.jsonl")
    assert asked == [500.0, 501.0, 502.0]  # asked until it answered, then never again
    assert [f.up for f in frames] == [False, False, True, True]
    assert header.bandwidth_bytes_per_s == 100e9
    assert "waiting for the server since" in log.getvalue()


def test_cli_default_matches_the_loop() -> None:
    assert watch_cmd.DEFAULT_START_TIMEOUT_S == run_mod.DEFAULT_START_TIMEOUT_S


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _frames(path: Path) -> list[Frame]:
    try:
        return read_record(path)[1]
    except (InferlabError, OSError):
        return []  # not written yet


def _until(what: Callable[[], bool], tries: int = 600) -> None:
    """Poll (bounded: 600 x 0.1 s) for something the watch process writes."""
    for _ in range(tries):
        if what():
            return
        time.sleep(0.1)
    raise AssertionError("the watch process never got there")


@pytest.mark.slow
def test_cli_waits_for_a_server_that_comes_up_later(tmp_path: Path) -> None:
    port = _free_port()
    rec = tmp_path / "w.jsonl"
    cmd = [sys.executable, "-m", "inferlab.cli", "watch", "--url", f"http://127.0.0.1:{port}",
           "--weight-bytes", "1GB", "--bandwidth", "10GB/s", "--interval", "0.25s",
           "--window", "1s", "--timeout", "0.5s", "--duration", "120s", "--record", str(rec),
           "--no-tui"]  # fmt: skip
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        _until(lambda: len(_frames(rec)) >= 2)  # nobody listens yet: waiting frames
        text = METRICS.read_text()

        async def metrics(_: web.Request) -> web.Response:
            return web.Response(text=text)

        app = web.Application()
        app.router.add_get("/metrics", metrics)
        with serve(app, port):
            _until(lambda: any(f.up for f in _frames(rec)))
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err
    frames = _frames(rec)
    first_up = next(i for i, f in enumerate(frames) if f.up)
    assert first_up >= 2
    assert all(not f.up and f.reading.startswith("waiting for the server since")
               for f in frames[:first_up])  # fmt: skip
    assert "waiting for the server since" in err and "first answered after" in err


def test_cli_unreachable_with_no_wait_is_one_line(run_cli: Any, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    stated = ["--weight-bytes", "1GB", "--bandwidth", "10GB/s"]
    code, _, err = run_cli(
        "watch", "--url", url, *stated, "--start-timeout", "0", "--record", str(tmp_path / "r")
    )
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert "--start-timeout" in lines[0] and "cannot reach" in lines[0]
    assert not (tmp_path / "r").exists()


def test_the_terminal_shows_the_wait_in_80_columns(tmp_path: Path) -> None:
    from rich.console import Console

    from inferlab.watch.record import Header
    from inferlab.watch.tui import render

    clock = FakeClock(500.0)
    cfg = _cfg(tmp_path, duration_s=1.0)
    run_watch(cfg, physics(), Scraper(clock, [MetricsUnreachable(REFUSED)]), no_util,
              log=io.StringIO(), clock=clock)  # fmt: skip
    header, frames = read_record(tmp_path / "w.jsonl")
    assert isinstance(header, Header)
    con = Console(width=200, record=True, color_system=None)
    con.print(render(frames[0], header, None))  # never up yet: waiting, not "down"
    text = con.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "waiting for the server since" in text and "down since" not in text
