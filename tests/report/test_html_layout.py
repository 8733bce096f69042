"""The report's sweep fits the page, and its throughput plot joins only levels of one kind
(a closed-loop sweep, open-loop rates, a replayed trace are three series, not one line)."""

from __future__ import annotations

import re
from pathlib import Path

from inferlab.metrics.runfolder import read_summary
from inferlab.report.console import sweep_rows
from inferlab.report.html import _sweep_tables
from inferlab.report.plots import SERIES, _series_kind

DEMO = Path(__file__).parents[1] / "data" / "demo_full_summary.json"


def test_the_server_columns_are_a_table_of_their_own() -> None:
    head, rows = sweep_rows(read_summary(DEMO))
    html = _sweep_tables(head, rows)
    tables = re.findall(r"<table>(.*?)</table>", html, re.S)
    assert len(tables) == 2
    measured, server = (re.findall(r"<th>(.*?)</th>", t) for t in tables)
    assert "goodput tok/s" in measured and not any(h.startswith("srv ") for h in measured)
    assert server[0] == "level" and all(h.startswith("srv ") for h in server[1:])
    assert len(measured) + len(server) - 1 == len(head)  # every column, once (level twice)
    assert html.count('class="wide"') == 2  # never cut: a narrow page scrolls the table


def test_each_kind_of_load_is_its_own_series() -> None:
    levels = read_summary(DEMO).levels
    kinds = {lv.label: _series_kind(lv) for lv in levels}
    assert kinds == {
        "c=1": "concurrency", "c=2": "concurrency", "c=4": "concurrency",
        "c=8": "concurrency", "c=16": "concurrency", "rate=0.37/s": "rate", "trace": "trace",
    }  # fmt: skip
    assert {k for k, _, _ in SERIES} == {"concurrency", "rate", "trace"}
