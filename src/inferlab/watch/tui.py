"""The terminal view: a rich Live layout, redrawn at most 4 times a second, usable in 80 columns.

It draws whatever the last Frame says; a server that went away is a red
"down since ..." line above the last numbers it had, and it resumes by itself.
"""

from __future__ import annotations

import time

from rich.console import Console, Group, RenderableType
from rich.live import Live as RichLive
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from inferlab.units import fmt_duration
from inferlab.watch.derive import Quantity
from inferlab.watch.frame import Frame
from inferlab.watch.record import Header

MAX_HZ = 4.0


def _pct(q: Quantity) -> str:
    return f"{q.value:.1%}" if q.value is not None else "?"


def _num(q: Quantity, unit: str = "", digits: int = 3) -> str:
    if q.value is None:
        return "?"
    v = q.value
    text = f"{v:.0f}" if abs(v) >= 100 else f"{v:.{digits}g}"
    return f"{text} {unit}".rstrip()


def _bar(q: Quantity, width: int = 18) -> Text:
    if q.value is None:
        return Text("·" * width, style="dim")
    n = round(max(0.0, min(1.0, q.value)) * width)
    return Text("█" * n, style="bold cyan") + Text("░" * (width - n), style="dim")


def _why(q: Quantity) -> Text:
    """An unknown value shows its reason (dim); a known one its basis, shortened."""
    text = q.basis if len(q.basis) <= 44 else q.basis[:43] + "…"
    return Text(text, style="dim italic" if q.value is None else "dim")


def _gauges(f: Frame) -> Table:
    t = Table.grid(padding=(0, 1))
    t.add_column(width=11, no_wrap=True)
    t.add_column(width=7, justify="right", no_wrap=True)
    t.add_column(width=18, no_wrap=True)
    t.add_column(overflow="ellipsis", no_wrap=True, max_width=37)
    assert f.live is not None
    what = {"gpu": "GPU util", "cpu": "server CPU"}.get(f.device_util_kind, "device util")
    for name, q in (("MBU", f.live.mbu), ("MFU", f.live.mfu), (what, f.device_util)):
        at_least = "≥" if "lower bound" in q.basis else ""  # KV not counted: context unknown
        t.add_row(Text(name, style="bold"), at_least + _pct(q), _bar(q), _why(q))
    return t


def _numbers(f: Frame) -> Table:
    lv = f.live
    assert lv is not None
    t = Table.grid(padding=(0, 1))
    for width in (16, 10, 16, 12):
        t.add_column(width=width, no_wrap=True, overflow="ellipsis")
    rows = [
        (
            "generated",
            _num(lv.generated_tokens_per_s, "tok/s"),
            "prompt",
            _num(lv.prompt_tokens_per_s, "tok/s"),
        ),
        ("engine steps", _num(lv.steps_per_s, "/s"), "tokens/step", _num(lv.tokens_per_step)),
        ("running", _num(lv.running), "waiting", _num(lv.waiting)),
        ("KV cache", _pct(lv.kv_cache_usage), "context/seq", _num(lv.context_tokens, "tok")),
        (
            "TTFT p50",
            fmt_duration(lv.ttft_p50_s.value, 3),
            "TTFT p99",
            fmt_duration(lv.ttft_p99_s.value, 3),
        ),
        (
            "TPOT p50",
            fmt_duration(lv.itl_p50_s.value, 3),
            "TPOT p99",
            fmt_duration(lv.itl_p99_s.value, 3),
        ),
        (
            "step measured",
            fmt_duration(lv.measured_step_s.value, 3),
            "step floor",
            fmt_duration(lv.floor_step_s.value, 3),
        ),
        ("above floor", _num(lv.above_floor, "x"), "bytes/step", _bytes(lv.bytes_per_step)),
    ]
    if lv.engine_bytes_per_step.value is not None:
        rows.append(("engine bytes/st", _bytes(lv.engine_bytes_per_step), "engine MBU",
                     _pct(lv.engine_mbu)))  # fmt: skip
    for a, b, c, d in rows:
        t.add_row(Text(a, style="dim"), b, Text(c, style="dim"), d)
    return t


def _bytes(q: Quantity) -> str:
    from inferlab.units import fmt_bytes

    return fmt_bytes(q.value, 3) if q.value is not None else "?"


def render(frame: Frame | None, header: Header, last_up: Frame | None = None) -> Panel:
    """The whole view for one frame; while down, the last numbers seen stay under the red line."""
    title = f"inferlab watch · {header.model} on {header.hardware}"
    if frame is None:
        return Panel(Text("first scrape …"), title=title, width=80)
    if frame.up and frame.snapshot:
        status = Text(f"up · {frame.snapshot.dialect} · {header.url}", style="green")
    elif last_up is None:  # never answered yet: waiting for it, not down
        status = Text(f"{frame.reading} · {header.url}", style="bold yellow")
    else:
        status = Text(frame.reading, style="bold red")
    parts: list[RenderableType] = [status]
    if frame.restarted:
        parts.append(Text("server restarted (counters reset): the window starts afresh", "yellow"))
    shown = frame if frame.live is not None else last_up
    if shown is not None and shown.live is not None:
        if shown is not frame:
            stamp = time.strftime("%H:%M:%S", time.localtime(shown.t_unix_s))
            parts.append(Text(f"last seen at {stamp}:", style="dim"))
        parts += [_gauges(shown), _numbers(shown)]
    if frame.up:
        parts.append(Text(frame.reading, style="bold"))
    sub = f"window {header.window_s:g} s · {time.strftime('%H:%M:%S')} · Ctrl-C to stop"
    return Panel(Group(*parts), title=title, subtitle=sub, width=80)


class TerminalView:
    """rich.live.Live refreshed by us, never faster than MAX_HZ."""

    def __init__(self, header: Header, console: Console | None = None) -> None:
        self.header = header
        self.console = console or Console(stderr=False)
        self._live = RichLive(
            render(None, header), console=self.console, auto_refresh=False, transient=False
        )
        self._last_draw = 0.0
        self._last_frame: Frame | None = None
        self._last_up: Frame | None = None

    def __enter__(self) -> TerminalView:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._last_frame is not None:
            view = render(self._last_frame, self.header, self._last_up)
            self._live.update(view, refresh=True)
        self._live.__exit__(None, None, None)

    def update(self, frame: Frame) -> None:
        self._last_frame = frame
        if frame.live is not None:
            self._last_up = frame
        now = time.monotonic()
        if now - self._last_draw < 1.0 / MAX_HZ:
            return
        self._last_draw = now
        self._live.update(render(frame, self.header, self._last_up), refresh=True)
