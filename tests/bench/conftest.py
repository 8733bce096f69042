"""The scripted fake server, started in its own process on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from inferlab.testing.fake_server import Script
from inferlab.testing.fake_server import running_fake_server as fake_server

__all__ = ["FAKE_URL_SCRIPT", "fake_server"]

FAKE_URL_SCRIPT = Script(ttft_s=0.03, tpot_s=0.01, slow_every=10)  # what fake_url serves


@pytest.fixture(scope="module")
def fake_url() -> Iterator[str]:
    s = FAKE_URL_SCRIPT
    with fake_server(ttft=s.ttft_s, tpot=s.tpot_s, slow_every=s.slow_every) as url:
        yield url
