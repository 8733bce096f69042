"""Start the scripted-step fake (inferlab.testing.fake_steps) in its own process."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import fields

from inferlab.engines.lifetime import die_with_parent
from inferlab.testing.fake_steps import StepScript


def _flags(script: StepScript) -> list[str]:
    return [a for f in fields(script) for a in (f"--{f.name}", str(getattr(script, f.name)))]


@contextlib.contextmanager
def running_fake_steps(script: StepScript) -> Iterator[str]:
    """Start the fake in its own process on a free port; yield its /v1 base URL."""
    cmd = [sys.executable, "-m", "inferlab.testing.fake_steps", "--port", "0", *_flags(script)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent())
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"fake step server did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
