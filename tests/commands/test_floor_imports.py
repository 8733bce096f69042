"""`inferlab floor` answers at once: it loads none of the heavy libraries (numpy, aiohttp,
gguf, rich, matplotlib), which only the verbs that need them import."""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import sys
from inferlab.cli import main
main(['floor', '--model', 'llama-3-8b', '--hardware', 'h100-sxm', '--json'])
heavy = ('numpy', 'aiohttp', 'gguf', 'rich', 'matplotlib', 'prometheus_client')
print(','.join(m for m in heavy if m in sys.modules), file=sys.stderr)
"""


@pytest.mark.slow  # a fresh interpreter: this process has imported everything already
def test_floor_imports_no_heavy_library() -> None:
    p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1:] in ([], [""])
