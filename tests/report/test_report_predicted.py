"""report.html with predictions: the predicted-vs-measured plot and table, from summary.json
alone (`inferlab report DIR` re-renders a demo folder the same way)."""

from __future__ import annotations

from pathlib import Path

from inferlab.jsonio import write_json
from inferlab.report.inputs import render_run
from inferlab.report.predicted import prediction_rows, prediction_table
from tests.sim.test_predict_block import predicted_run


def test_the_report_draws_predicted_against_measured(tmp_path: Path) -> None:
    run = predicted_run()
    write_json(tmp_path / "summary.json", run)
    html = render_run(tmp_path, run).read_text()
    assert (tmp_path / "predicted_vs_measured.png").stat().st_size > 0
    assert "Predicted before measuring, and measured" in html
    assert "engine alone (m.gguf, 1 thread(s)); llama.cpp policy, --parallel 16" in html
    head, rows = prediction_rows(run)
    assert [r[0] for r in rows] == ["c=1", "c=2", "c=4", "c=8", "c=16"]
    assert head[2:5] == ["TTFT p50 ms pred", "meas", "err"] and all(r[1] == "yes" for r in rows)
    c1 = run.levels[0]
    assert rows[0][3] == f"{(c1.ttft_s.p50 or 0) * 1e3:.0f}"  # TTFT p50 measured
    assert rows[0][9] == f"{(c1.tpot_s.p50 or 0) * 1e3:.1f}"  # TPOT measured
    assert len(prediction_table(run)) == 2 + len(rows)


def test_the_report_command_re_renders_a_folder_with_predictions(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_json(tmp_path / "summary.json", predicted_run())
    code, _, err = run_cli("report", str(tmp_path))
    assert code == 0, err
    assert "Predicted before measuring" in (tmp_path / "report.html").read_text()
    assert (tmp_path / "predicted_vs_measured.png").exists()
