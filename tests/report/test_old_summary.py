"""`inferlab report` on a summary.json written before intervals (the checked-in llama.cpp
sweep, no `uncertainty`, no records): it still reads, and says it has no intervals, on the
console and in report.html; two such runs compared say why they get no verdicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from inferlab.jsonio import loads_strict
from inferlab.report.interval_text import NONE_KEPT
from tests.clirun import RunCli

OLD = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"


def old_run(folder: Path) -> Path:
    folder.mkdir()
    shutil.copy(OLD, folder / "summary.json")
    assert all("uncertainty" not in lv for lv in json.loads(OLD.read_text())["levels"])
    return folder


def test_report_reads_an_old_summary_and_says_it_has_no_intervals(
    tmp_path: Path, run_cli: RunCli
) -> None:
    d = old_run(tmp_path / "old")
    code, out, err = run_cli("report", str(d))
    assert code == 0, err
    assert NONE_KEPT in out and "±" not in out
    assert NONE_KEPT in (d / "report.html").read_text()
    assert (d / "throughput_vs_tpot.png").stat().st_size > 0  # drawn, without bars
    code, out, _ = run_cli("report", str(d), "--json")
    assert code == 0
    assert [lv["label"] for lv in loads_strict(out)["levels"]] == [
        "c=1", "c=2", "c=4", "c=8", "c=16"
    ]  # fmt: skip
    assert all("uncertainty" not in lv for lv in loads_strict(out)["levels"])


def test_two_old_summaries_compared_say_why_they_get_no_verdicts(
    tmp_path: Path, run_cli: RunCli
) -> None:
    a, b = old_run(tmp_path / "a"), old_run(tmp_path / "b")
    code, out, err = run_cli("report", str(a), str(b), "--out", str(tmp_path / "cmp"))
    assert code == 0, err
    assert "no verdicts (a (measured): no records.jsonl; b (measured): no records.jsonl)" in out
