"""The fake vLLM (testing/fake_vllm.py) in its own process, for the profile's tests."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator

from inferlab.testing.fake_server import serving
from inferlab.testing.fake_vllm import VllmScript


@contextlib.contextmanager
def running_fake_vllm(script: VllmScript) -> Iterator[str]:
    """Start the fake on a free port; yield its /v1 base URL."""
    text = json.dumps(dataclasses.asdict(script))
    with serving("inferlab.testing.fake_vllm", ["--script", text]) as url:
        yield url
