"""`inferlab report A B`: a simulated run beside a measured one (and two simulated runs),
level by level, with the difference; levels on one side only are named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from inferlab.metrics.runfolder import load_summary
from inferlab.report.diff import diff_rows, diff_runs

REAL = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"
# The checked-in sweep's c=4 level (llama.cpp, SmolLM2 on 2 CPU cores).
REAL_C4_TPOT_P50_MS = 37.4923636031746


def _measured(tmp_path: Path) -> Path:
    run = tmp_path / "measured"
    run.mkdir()
    shutil.copy(REAL, run / "summary.json")
    return run


def _simulate(run_cli, out: Path, measured: Path, users: int, *extra: str) -> None:  # type: ignore[no-untyped-def]
    code, _, err = run_cli(
        "simulate", "--calibrate", str(measured), "--users", str(users),
        "--prompt-tokens", "32", "--output-tokens", "64", "--out", str(out), *extra,
    )  # fmt: skip
    assert code == 0, err


def test_simulated_beside_measured(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    measured = _measured(tmp_path)
    sim = tmp_path / "sim"
    _simulate(run_cli, sim, measured, 4)
    a, b = load_summary(sim), load_summary(measured)
    d = diff_runs("sim", a, "measured", b)
    # a simulated closed loop of 4 users is labelled as bench labels it: c=4
    assert [p.label for p in d.pairs] == ["c=4"]
    assert d.only_a == () and d.only_b == ("c=1", "c=2", "c=8", "c=16")
    tpot = {m.name: m for m in d.pairs[0].metrics}["TPOT p50"]
    sim_tpot_ms = (a.levels[0].tpot_s.p50 or 0.0) * 1e3
    assert tpot.a == pytest.approx(sim_tpot_ms)
    assert tpot.b == pytest.approx(REAL_C4_TPOT_P50_MS)
    assert tpot.delta == pytest.approx(REAL_C4_TPOT_P50_MS - sim_tpot_ms)
    assert tpot.ratio == pytest.approx(REAL_C4_TPOT_P50_MS / sim_tpot_ms)
    ok = {m.name: m for m in d.pairs[0].metrics}["requests ok"]
    assert (ok.a, ok.b, ok.delta) == (4.0, 16.0, 12.0)

    code, out, err = run_cli(
        "report", str(sim), str(measured), "--compare", str(tmp_path / "c.png")
    )
    assert code == 0, err
    assert (
        any(ln.lstrip().startswith("c=4") for ln in out.splitlines())
        and "only in B (measured (measured)): c=1, c=2, c=8, c=16" in out
    )
    assert f"{REAL_C4_TPOT_P50_MS:.4g}" in out  # 37.49, the measured TPOT p50 in ms
    page = (tmp_path / "c.html").read_text()
    assert "c=4" in page and "c=16" in page and "TTFT p99 ms" in page


def test_two_simulated_runs_matched_by_label(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    measured = _measured(tmp_path)
    one, two = tmp_path / "one", tmp_path / "two"
    _simulate(run_cli, one, measured, 4)
    _simulate(run_cli, two, measured, 4, "--policy", "static")
    a, b = load_summary(one), load_summary(two)
    d = diff_runs("continuous", a, "static", b)
    assert [p.label for p in d.pairs] == ["c=4"] and not (d.only_a or d.only_b)
    head, rows = diff_rows(d)
    assert head == ["level", "metric", "continuous", "static", "B - A", "B / A"]
    e2e = next(r for r in rows if r[1] == "E2E p50 ms")
    a_ms, b_ms = (a.levels[0].e2e_s.p50 or 0) * 1e3, (b.levels[0].e2e_s.p50 or 0) * 1e3
    assert e2e[2:5] == [f"{a_ms:.4g}", f"{b_ms:.4g}", f"{b_ms - a_ms:+.4g}"]


def test_nothing_in_common(tmp_path: Path) -> None:
    from dataclasses import replace

    b = load_summary(_measured(tmp_path))
    a = replace(b, levels=tuple(replace(lv, label="rate=1/s", concurrency=None, rate_per_s=1.0)
                                for lv in b.levels[:1]))  # fmt: skip
    d = diff_runs("a", a, "b", b)
    assert d.pairs == () and d.only_a == ("rate=1/s",) and len(d.only_b) == 5
