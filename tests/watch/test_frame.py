"""Watcher: down since ..., resumes; a restart; the computed reading; the terminal at 80 columns."""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console

from inferlab.servermetrics.dialects import MetricsError
from inferlab.servermetrics.snapshot import Snapshot
from inferlab.watch.derive import Quantity
from inferlab.watch.frame import Frame, Watcher
from inferlab.watch.record import Header
from inferlab.watch.tui import render
from tests.watch.helpers import physics, steady


def scripted(items: list[Snapshot | BaseException]) -> Iterator[Snapshot]:
    for it in items:
        if isinstance(it, BaseException):
            raise it
        yield it


class Script:
    def __init__(self, items: list[Snapshot | BaseException]) -> None:
        self.items = list(items)

    def __call__(self) -> Snapshot:
        it = self.items.pop(0)
        if isinstance(it, BaseException):
            raise it
        return it


def no_util() -> tuple[Quantity, str]:
    return Quantity(0.93, "pid 1 (llama-server)"), "cpu"


def header() -> Header:
    return Header.of("http://127.0.0.1:8080", physics(), 1.0, 10.0, 0.0)


def test_down_since_then_resumes_after_a_restart() -> None:
    down = MetricsError("cannot reach http://127.0.0.1:8080/metrics (connection refused)")
    w = Watcher(
        Script([steady(0), steady(1), down, down, steady(4, t0_steps=0), steady(5, t0_steps=0)]),
        physics(), 10.0, no_util,
    )  # fmt: skip
    f = [w.tick() for _ in range(6)]
    assert f[1].up and f[1].live is not None and f[1].live.mbu.value is not None
    assert not f[2].up and f[2].down_since_unix_s is not None
    assert f[3].down_since_unix_s == f[2].down_since_unix_s  # since the first failure
    assert f[2].reading.startswith("down since ") and "connection refused" in f[2].reading
    assert f[4].up and f[4].live is not None and f[4].live.steps_per_s.value is None
    assert f[5].live is not None and f[5].live.steps_per_s.value == 20.0  # resumed, fresh window


def test_a_counter_reset_while_up_is_flagged() -> None:
    w = Watcher(Script([steady(0), steady(1), steady(2, t0_steps=0)]), physics(), 10.0, no_util)
    frames = [w.tick() for _ in range(3)]
    assert [f.restarted for f in frames] == [False, False, True]


def test_reading_names_the_wall_and_the_contrast() -> None:
    w = Watcher(Script([steady(0), steady(10)]), physics(), 10.0, no_util)
    w.tick()
    f = w.tick()
    # 2.2 GB x 20 steps/s / 100 GB/s = 44 %; 2e9 x 90 tok/s / 50 TFLOPS = 0.36 %
    assert f.reading.startswith("memory-bound: 44% of peak bandwidth, 0.4% of peak FLOPS")
    assert "server CPU reads 93%" in f.reading
    assert "batch more or quantise" in f.reading


def test_frame_json_round_trip() -> None:
    w = Watcher(Script([steady(0), steady(10)]), physics(), 10.0, no_util)
    w.tick()
    f = w.tick()
    back = Frame.from_json(f.to_json())
    assert back.live is not None and f.live is not None
    assert back.live.mbu == f.live.mbu and back.snapshot == f.snapshot


def test_terminal_view_fits_80_columns_up_and_down() -> None:
    down = MetricsError("cannot reach http://127.0.0.1:8080/metrics")
    w = Watcher(Script([steady(0), steady(10), down]), physics(), 10.0, no_util)
    frames = [w.tick(), w.tick(), w.tick()]
    for f in frames:
        con = Console(width=200, record=True, color_system=None)
        con.print(render(f, header(), frames[1]))
        text = con.export_text()
        assert max(len(line) for line in text.splitlines()) <= 80
        assert "MBU" in text
    assert "down since" in text and "44.0%" in text  # the last numbers stay under the red line
