"""Rendering a saved run stays light: report/ imports neither bench nor aiohttp."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_report_imports_neither_bench_nor_aiohttp() -> None:
    code = (
        "import sys\n"
        "import inferlab.report.console, inferlab.report.reading, inferlab.report.html\n"
        "import inferlab.report.plots, inferlab.commands.report, inferlab.summary\n"
        "bad = sorted(m for m in sys.modules if m == 'aiohttp' or m.startswith('inferlab.bench'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
