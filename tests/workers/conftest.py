"""One scripted fake server for every workers test (bench --workers and --ray): 20 ms to
the first token, then 20 ms a token, no slow gaps."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from inferlab.testing.fake_server import running_fake_server


@pytest.fixture(scope="session")
def fake_url() -> Iterator[str]:
    with running_fake_server(ttft=0.02, tpot=0.02, slow_every=0) as url:
        yield url
