"""The SLO on the console (columns and the lines under the table), in summary.json (typed
round trip) and as a plot, from a saved bench summary with `slo` and `saturation` added."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from inferlab.jsonio import dumps
from inferlab.records import RequestRecord
from inferlab.report.console import slo_lines, sweep_rows
from inferlab.report.plots import goodput_vs_load
from inferlab.slo.attainment import evaluate
from inferlab.slo.grammar import parse_slo
from inferlab.slo.outcome import outcomes
from inferlab.slo.saturation import saturation
from inferlab.slo.search import MaxLoadSearch
from inferlab.summary import RunSummary

SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"
MS = 1_000_000


def records(tpot_ms: float) -> list[RequestRecord]:
    return [
        RequestRecord(
            request_id=i,
            level="x",
            phase="measure",
            prompt_tokens_target=8,
            max_tokens=5,
            send_ns=i * 1000 * MS,
            event_ns=[i * 1000 * MS + 50 * MS + int(j * tpot_ms * MS) for j in range(5)],
            event_tokens=[1] * 5,
            http_status=200,
            finish_reason="length",
            completion_tokens=5,
        )  # fmt: skip
        for i in range(10)
    ]


def judged() -> RunSummary:
    s = RunSummary.from_json(json.loads(SWEEP.read_text()))
    slo = parse_slo("tpot_p50=30ms")
    search = MaxLoadSearch("concurrency")
    levels = []
    for lv in s.levels:
        g = evaluate(slo, outcomes(records(10 * lv.value)))
        search.record(lv.value, g)
        levels.append(dataclasses.replace(lv, slo=g))
    last = dataclasses.replace(
        levels[-1], saturation=saturation(10.0, [i / 5 for i in range(50)], None, "none")
    )
    return dataclasses.replace(s, levels=(*levels[:-1], last), max_load=search.result())


def test_columns_lines_and_round_trip(tmp_path: Path) -> None:
    s = judged()
    head, rows = sweep_rows(s)
    assert head[-5:] == ["SLO", "attain", "goodput req/s", "goodput tok/s", "load"]
    passes = [row[head.index("SLO")] for row in rows]
    assert passes == ["pass" if lv.value * 10 <= 30 else "fail" for lv in s.levels]
    assert rows[-1][-1] == "overloaded" and rows[0][-1] == "-"
    lines = slo_lines(s)
    assert "at least 90% of its requests" in lines[0]
    assert any("grow with the run's length" in line for line in lines)
    assert lines[-1].startswith("max concurrency within the SLO:")
    again = RunSummary.from_json(json.loads(dumps(s)))  # strict JSON, read back typed
    assert again.levels == s.levels and again.max_load == s.max_load
    assert goodput_vs_load(s, tmp_path / "goodput.png") == tmp_path / "goodput.png"
    assert (tmp_path / "goodput.png").stat().st_size > 0
