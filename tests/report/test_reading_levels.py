"""The sweep is read on its closed-loop levels, whatever runs after them (issue 21: one
verdict): a replayed trace or a Poisson level last must not be read as the largest batch."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from inferlab.report.reading import read_sweep, sweep_levels
from inferlab.summary import RunSummary

SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"


def _with_trace_last() -> RunSummary:
    d = json.loads(SWEEP.read_text())
    trace = copy.deepcopy(d["levels"][0])
    trace.pop("concurrency", None)
    trace["label"] = "trace"
    trace["tpot_s"] = {**trace["tpot_s"], "p50": 0.2728}  # slower than any sweep level
    d["levels"].append(trace)
    return RunSummary.from_json(d)


def test_the_sweep_is_read_on_its_closed_loop_levels() -> None:
    s = _with_trace_last()
    assert [x.label for x in sweep_levels(s)] == ["c=1", "c=2", "c=4", "c=8", "c=16"]
    lines = read_sweep(s)
    text = "\n".join(lines)
    assert lines[0].startswith("Bound: at c=16")
    assert "272.8" not in text  # the trace's TPOT is not the sweep's last step
