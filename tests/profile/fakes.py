"""Start the scripted-step fake (inferlab.testing.fake_steps) in its own process."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import fields

from inferlab.testing.fake_server import serving
from inferlab.testing.fake_steps import StepScript


def _flags(script: StepScript) -> list[str]:
    return [a for f in fields(script) for a in (f"--{f.name}", str(getattr(script, f.name)))]


@contextlib.contextmanager
def running_fake_steps(script: StepScript) -> Iterator[str]:
    """Start the fake in its own process on a free port; yield its /v1 base URL."""
    with serving("inferlab.testing.fake_steps", _flags(script)) as url:
        yield url
