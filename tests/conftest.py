"""Shared fixtures: the card's H100 and Llama 3 8B stated as the cards state them."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from inferlab.cli import main
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec, get_hardware
from tests.benchmods import benchmark_module
from tests.clirun import RunCli, RunJson

GB = 1e9
KIB = 1024


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture(autouse=True, scope="session")
def interactive_sigint() -> Iterator[None]:
    """The session runs as from a terminal: SIGINT raises KeyboardInterrupt, so the processes
    a test starts can be stopped with it, whatever the session inherited (a shell starts a
    background job with SIGINT ignored, and a child inherits an ignored signal)."""
    saved = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if saved is not None:
        signal.signal(signal.SIGINT, saved)


@pytest.fixture(autouse=True)
def stop_signal_handlers_restored() -> Iterator[None]:
    """A test that runs a verb in-process leaves the stop signals' handlers as it found them."""
    saved = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    yield
    for s, h in saved.items():
        if h is not None and signal.getsignal(s) is not h:
            signal.signal(s, h)


@pytest.fixture
def h100() -> HardwareSpec:
    return get_hardware("h100-sxm")


@pytest.fixture
def llama8b_card() -> ModelCost:
    """Llama 3 8B as deck 01 states it: 16 GB BF16 weights, 128 KiB KV per token, 8B params."""
    return ModelCost.stated(weight_bytes=16 * GB, kv_bytes_per_token=128 * KIB, params=8e9)


@pytest.fixture
def run_json(capsys: pytest.CaptureFixture[str]) -> RunJson:
    """Run the CLI in-process with --json; assert it exits 0; return the parsed object."""

    def _run(*argv: str) -> dict[str, Any]:
        code = main([*argv, "--json"])
        out = capsys.readouterr().out
        assert code == 0, out
        result: dict[str, Any] = json.loads(out)
        return result

    return _run


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> RunCli:
    """Run the CLI in-process; return (exit code, stdout, stderr). argparse exits become codes."""

    def _run(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
        cap = capsys.readouterr()
        return code, cap.out, cap.err

    return _run


@pytest.fixture
def predict_accuracy(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """benchmarks/predict_accuracy.py as a module."""
    return benchmark_module("predict_accuracy", monkeypatch)
