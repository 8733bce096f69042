"""Preemptions in the report: the server's count beside the predicted one, where a level has
both; a simulated run's own count; nothing at all when no level preempted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from inferlab.jsonio import write_json
from inferlab.report.console import sweep_rows
from inferlab.report.inputs import render_run
from inferlab.report.predicted import preemption_lines
from inferlab.summary import LevelSummary, RunSummary, ServerLevelMetrics
from tests.sim.test_predict_block import predicted_run


def server(preemptions: float | None) -> ServerLevelMetrics:
    """A server's books that publish nothing but `preemptions` (as vLLM counts them)."""
    books: dict[str, object] = {f.name: None for f in dataclasses.fields(ServerLevelMetrics)}
    books |= {"dialect": "vllm", "samples": 2, "failed_scrapes": 0, "counter_reset": False}
    books |= {"step_window_full_batch": False, "preemptions": preemptions}
    return ServerLevelMetrics(**books)  # type: ignore[arg-type]


def with_counts(run: RunSummary, counts: list[tuple[float | None, int | None]]) -> RunSummary:
    """The run's first levels with (server's count, predicted count)."""
    levels: list[LevelSummary] = []
    for lv, (meas, pred) in zip(run.levels, counts, strict=False):
        assert lv.predicted is not None
        p = dataclasses.replace(lv.predicted, preemptions=pred)
        levels.append(dataclasses.replace(lv, server=server(meas), predicted=p))
    return dataclasses.replace(run, levels=tuple(levels))


def test_the_servers_count_stands_beside_the_predicted_one(tmp_path: Path) -> None:
    run = with_counts(predicted_run(), [(3.0, 4), (0.0, None), (None, 2)])
    head, rows = sweep_rows(run)
    assert head[-1] == "srv preempt"
    assert [r[-1] for r in rows] == ["3 (pred 4)", "0 (pred 0)", "- (pred 2)"]
    # a predicted block without preemptions predicted none; a server without the counter
    # (llama.cpp) has nothing to stand beside
    assert preemption_lines(run) == [
        "preemptions c=1: predicted 4, server 3",
        "preemptions c=2: predicted 0, server 0",
    ]
    write_json(tmp_path / "summary.json", run)
    html = render_run(tmp_path, run).read_text()
    assert "Preemptions c=1: predicted 4, server 3." in html
    assert "<th>srv preempt</th>" in html


def test_no_column_when_no_level_preempted() -> None:
    run = with_counts(predicted_run(), [(0.0, None), (0.0, 0)])
    head, _ = sweep_rows(run)
    assert "srv preempt" not in head and "preempt" not in head


def test_a_simulated_run_shows_its_own_count() -> None:
    run = predicted_run()
    levels = [
        dataclasses.replace(lv, predicted=None, preemptions=i) for i, lv in enumerate(run.levels)
    ]
    head, rows = sweep_rows(dataclasses.replace(run, levels=tuple(levels)))
    assert head[-1] == "preempt" and [r[-1] for r in rows] == [str(i) for i in range(len(rows))]
