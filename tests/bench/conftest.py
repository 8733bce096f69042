"""The scripted fake server, started in its own process on a free loopback port."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def fake_server(ttft: float, tpot: float, slow_every: int = 10) -> Iterator[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inferlab.testing.fake_server",
            "--port",
            "0",
            "--ttft",
            str(ttft),
            "--tpot",
            str(tpot),
            "--slow-every",
            str(slow_every),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def fake_url() -> Iterator[str]:
    with fake_server(ttft=0.03, tpot=0.01) as url:
        yield url
