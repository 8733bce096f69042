"""Hardening suites: the fake server for bounded-bench and hard-kill tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from inferlab.testing.fake_server import running_fake_server


@pytest.fixture(scope="module")
def fake_url() -> Iterator[str]:
    with running_fake_server(ttft=0.01, tpot=0.005) as url:
        yield url
