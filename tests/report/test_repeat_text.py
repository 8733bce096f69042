"""A peer's repeated benchmark in the console and in compare.html (report/repeat_text.py,
report/html.py's peer_section): the runs with their verdicts, the intervals side by side,
nothing for a single run."""

from __future__ import annotations

import re
from pathlib import Path

from inferlab.peers.detect import read_peer
from inferlab.peers.judge import summarise
from inferlab.report.html import peer_section
from inferlab.report.repeat_text import interval_table, repeat_lines, repeats_of, run_table
from tests.clirun import RunCli

PEERS = Path(__file__).parents[1] / "fixtures" / "peers" / "aiperf-0.13.0"
RUNS3 = PEERS / "c4-3runs"
AGGREGATE = RUNS3 / "aggregate" / "profile_export_aiperf_aggregate.json"


def test_run_table_rows() -> None:
    block = repeats_of(summarise(read_peer(AGGREGATE)))
    assert block is not None
    head, rows = run_table(block)
    assert head[:3] == ["run", "verdict", "ok"]
    assert [r[:3] for r in rows] == [
        ["run_0001", "same", "16"],
        ["run_0002", "cache-served", "16"],
        ["run_0003", "cache-served", "16"],
    ]
    assert rows[0][3] == "883.7/1070.5/1070.8" and rows[1][-1] == "97%"


def test_interval_table_one_run_kept() -> None:
    s = summarise(read_peer(AGGREGATE))
    block = repeats_of(s)
    assert block is not None
    head, rows = interval_table(s, block)
    assert head[1:] == [
        "inferlab: c=4 (run_0001)",
        "apart (run_0002, run_0003)",
        "aiperf 0.13.0: mean of 3 runs, CV",
    ]
    tput = rows[-1]
    assert tput[0] == "output tok/s" and tput[1] == "70.0 (one run)"  # nothing to resample
    assert tput[3] == "86.7 [38.6, 134.9], 22%"


def test_nothing_for_a_single_run() -> None:
    s = summarise(read_peer(PEERS / "c4" / "profile_export.jsonl"))
    assert repeats_of(s) is None and repeat_lines(s) == [] and peer_section(s) == ""


def test_compare_html_shows_the_runs_and_both_intervals(tmp_path: Path, run_cli: RunCli) -> None:
    code, out, err = run_cli("report", str(RUNS3), str(PEERS / "c4"), "--out", str(tmp_path))
    assert code == 0, err
    page = (tmp_path / "compare.html").read_text(encoding="utf-8")
    section = page[page.index("Its 3 runs") :]
    assert "<td>run_0002</td><td>cache-served</td>" in section
    assert "<li>run_0003: TTFT p50 76.6 ms is under half of run_0001" in section
    assert "<td>346.1 [0.0, 1502.7], 135%*</td>" in section
    lows = [float(x) for x in re.findall(r"\[(-?[\d.]+), ", page)]
    assert lows and min(lows) >= 0.0
    assert page.count("Its 3 runs") == 1  # the single-run side has none
