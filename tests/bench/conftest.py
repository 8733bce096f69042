"""The scripted fake server, started in its own process on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from inferlab.testing.fake_server import running_fake_server as fake_server

__all__ = ["fake_server"]


@pytest.fixture(scope="module")
def fake_url() -> Iterator[str]:
    with fake_server(ttft=0.03, tpot=0.01) as url:
        yield url
