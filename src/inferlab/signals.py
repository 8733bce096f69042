"""SIGTERM and SIGHUP stop a verb exactly as Ctrl-C does; the exit code says which came.

A service manager stops things with SIGTERM, a closed terminal sends SIGHUP; both
should leave what Ctrl-C leaves (completed records, a summary marked
`interrupted`, no child server). Rather than teach every verb three signals, the
handler forwards SIGTERM/SIGHUP to whatever handles SIGINT at that moment:
outside an event loop that is Python's default (KeyboardInterrupt where the code
stands); inside `asyncio.run` it is the runner's, which cancels the main task so
`finally` blocks run and then raises KeyboardInterrupt. The signal is remembered,
so the CLI exits 128 + its number (130 SIGINT, 143 SIGTERM, 129 SIGHUP), and a
verb that kept something says where with `kept()`, for the one closing line.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_FORWARDED = (signal.SIGTERM, signal.SIGHUP)


class _State:
    received: int | None = None  # the first stop signal; later ones only hurry it
    kept: str | None = None


def _forward(signum: int, frame: FrameType | None) -> None:
    if _State.received is None:
        _State.received = signum
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored or default-in-C: still stop, the way Ctrl-C would by default
        raise KeyboardInterrupt


@contextmanager
def handled() -> Iterator[None]:
    """While inside, SIGTERM/SIGHUP raise the Ctrl-C path; old handlers come back after."""
    _State.received, _State.kept = None, None
    try:
        old = {s: signal.signal(s, _forward) for s in _FORWARDED}
    except ValueError:  # not the main thread: signals only reach the main thread's handlers
        yield
        return
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def kept(note: str) -> None:
    """Say what an interrupted verb kept, e.g. 'completed records and summary.json in X'."""
    _State.kept = note


def received() -> int:
    """The stop signal that came (SIGINT when none was forwarded: a real Ctrl-C)."""
    return _State.received or signal.SIGINT


def exit_code() -> int:
    return 128 + int(received())


def stop_line(verb: str) -> str:
    """The one line printed on the way out."""
    what = _State.kept or "nothing was written"
    return f"inferlab {verb}: stopped by {signal.Signals(received()).name}; {what}"
