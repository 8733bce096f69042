"""SIGTERM/SIGHUP take the Ctrl-C path: KeyboardInterrupt, `finally` runs, exit code says which."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
import uvloop

from inferlab import signals


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_signal_outside_a_loop_raises_keyboard_interrupt(sig: int, code: int) -> None:
    with signals.handled(), pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), sig)
        time.sleep(5)  # never reached in full: the handler raises as soon as it runs
    assert signals.received() == sig and signals.exit_code() == code
    assert "stopped by " + signal.Signals(sig).name in signals.stop_line("bench")


@pytest.mark.parametrize("run", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
def test_sigterm_in_an_event_loop_cancels_the_task_and_runs_finally(
    run: Callable[[Any], Any],
) -> None:
    steps: list[str] = []

    async def work() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(5)
            steps.append("slept")
        except asyncio.CancelledError:
            steps.append("cancelled")  # like a bench level: it sees the cancel, then cleans up
            raise
        finally:
            steps.append("finally")

    with signals.handled(), pytest.raises(KeyboardInterrupt):
        run(work())
    assert steps == ["cancelled", "finally"]
    assert signals.exit_code() == 143


def test_handlers_come_back_and_state_resets() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with signals.handled():
        assert signal.getsignal(signal.SIGTERM) is not before
        signals.kept("records in X")
    assert signal.getsignal(signal.SIGTERM) is before
    assert signals.stop_line("serve").endswith("records in X")
    with signals.handled():
        pass
    assert signals.exit_code() == 130  # a fresh run that saw no signal: plain Ctrl-C
    assert signals.stop_line("plan").endswith("nothing was written")
