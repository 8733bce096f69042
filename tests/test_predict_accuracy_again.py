"""benchmarks/predict_accuracy.py --again: the second measurement scored against the first
by the same targets, and on how many shapes the prediction came as close as it."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from inferlab.records import RecordWriter, RequestRecord

QUANTITIES = ("tpot_p50_s", "ttft_p50_s", "ttft_p99_s", "goodput_requests_per_s")
Errors = tuple[float, float, float, float]


def row(pa: ModuleType, errors: Errors) -> dict[str, Any]:
    """A row whose first measurement is 1.0 everywhere and whose other side is off by
    `errors` (TPOT p50, TTFT p50, TTFT p99, goodput)."""
    out: dict[str, Any] = {
        k: {"predicted": 1.0 + e, "measured": 1.0, "error": e}
        for k, e in zip(QUANTITIES, errors, strict=True)
    }
    out["missed"] = pa.misses(out)
    return out


def shape(pa: ModuleType, predicted: Errors, again: Errors) -> dict[str, Any]:
    r = row(pa, predicted)
    r["again"] = row(pa, again)
    return r


def test_the_measurement_again_is_scored_by_the_same_targets(
    predict_accuracy: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    pa = predict_accuracy
    res = {
        "shapes": {
            # the prediction misses TPOT (-30 %), the server itself moved -12 %: both miss
            "a": shape(pa, (-0.30, 0.05, 0.0, 0.0), (-0.12, 0.20, 0.0, 0.0)),
            # the prediction within every target, the server moved less
            "b": shape(pa, (0.08, -0.10, 0.20, 0.05), (0.02, 0.01, -0.30, 0.0)),
        },
        "max_load": [
            {"slo": "x", "predicted": 4, "measured": 4, "equal": True, "again": 3},
            {"slo": "y", "predicted": 8, "measured": 8, "equal": True, "again": 8},
        ],
    }
    pa.summary_line(res)
    out = capsys.readouterr().out
    within = "or the measured interval:"
    none = "(0 within noise)"
    assert (
        f"tpot_p50 within 10% {within} 1 of 2 shapes {none}; measured again: 1 of 2 {none}" in out
    )
    assert (
        f"ttft_p50 within 15% {within} 2 of 2 shapes {none}; measured again: 1 of 2 {none}" in out
    )
    assert (
        f"ttft_p99 within 25% {within} 2 of 2 shapes {none}; measured again: 1 of 2 {none}" in out
    )
    assert (
        f"goodput within 10% (or both 0) {within} 2 of 2 shapes {none}; measured again: 2 of 2"
        in out
    )
    # |pred| <= |again|: TPOT on neither; TTFT p50 on a (5 <= 20); TTFT p99 on a (0 <= 0)
    # and b (20 <= 30); goodput on a only (0 <= 0)
    assert "tpot_p50: predicted as close as measured again on 0 of 2 shapes" in out
    assert "ttft_p50: predicted as close as measured again on 1 of 2 shapes" in out
    assert "ttft_p99: predicted as close as measured again on 2 of 2 shapes" in out
    assert "goodput: predicted as close as measured again on 1 of 2 shapes" in out
    assert "max load measured again equal to the first: 1 of 2" in out


def test_without_again_the_summary_says_nothing_of_it(
    predict_accuracy: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    pa = predict_accuracy
    res = {"shapes": {"a": row(pa, (0.0, 0.0, 0.0, 0.0))}, "max_load": []}
    pa.summary_line(res)
    out = capsys.readouterr().out
    assert "tpot_p50 within 10% or the measured interval: 1 of 1 shapes (0 within noise)\n" in out
    assert "again" not in out


def test_a_shape_off_its_target_but_inside_the_measured_interval_counts_within_noise(
    predict_accuracy: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    pa = predict_accuracy
    noisy = row(pa, (0.12, 0.0, 0.0, 0.0))  # TPOT p50 12 % off its measurement of 1.0...
    noisy["tpot_p50_s"]["ci95"] = [0.85, 1.15]  # ...whose interval reaches 15 % above it
    noisy["missed"] = pa.misses(noisy)
    tight = row(pa, (0.12, 0.0, 0.0, 0.0))
    tight["tpot_p50_s"]["ci95"] = [0.97, 1.03]  # 3 %: a miss
    tight["missed"] = pa.misses(tight)
    close = row(pa, (0.08, 0.0, 0.0, 0.0))  # within the 10 % target
    assert (noisy["missed"], tight["missed"], close["missed"]) == ([], ["tpot_p50_s"], [])
    assert pa.grade_of("tpot_p50_s", noisy["tpot_p50_s"]) == "within_noise"
    assert pa.grade_of("tpot_p50_s", tight["tpot_p50_s"]) == "miss"
    assert pa.grade_of("tpot_p50_s", close["tpot_p50_s"]) == "within_target"
    line = pa.grade_line(noisy)
    assert "TPOT p50 [850.0-1150.0] within_noise, TTFT p50 within_target" in line
    pa.summary_line({"shapes": {"a": noisy, "b": tight, "c": close}, "max_load": []})
    out = capsys.readouterr().out
    assert "tpot_p50 within 10% or the measured interval: 2 of 3 shapes (1 within noise)" in out


def test_calibration_counts_the_second_measurement_inside_the_firsts_interval(
    predict_accuracy: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four (shape, quantity) pairs have an interval on the first measurement (a pair
    without one, or not measured again, does not count): 3 of the 4 lie inside."""

    def q(second: float, ci95: list[float] | None) -> dict[str, Any]:
        return {"predicted": second, "measured": 1.0, "error": second - 1.0, "ci95": ci95}

    rows = [
        {"again": {"tpot_p50_s": q(1.04, [0.95, 1.05]), "ttft_p50_s": q(1.2, [0.9, 1.1])}},
        {"again": {"tpot_p50_s": q(0.97, [0.90, 1.10]), "ttft_p50_s": q(1.0, None)}},
        {"again": {"goodput_requests_per_s": q(1.0, [0.5, 1.5])}},
        {"tpot_p50_s": q(1.0, [0.9, 1.1])},  # not measured again
    ]
    cal = predict_accuracy.calibration(rows)
    assert cal["pairs"] == 4 and cal["covered"] == 3
    assert cal["per_quantity"]["tpot_p50_s"] == {"covered": 2, "pairs": 2}
    assert cal["per_quantity"]["ttft_p50_s"] == {"covered": 0, "pairs": 1}
    assert cal["half_width_median"] == pytest.approx(0.10)
    assert cal["half_width_max"] == pytest.approx(0.50)
    predict_accuracy.print_calibration(cal)
    out = capsys.readouterr().out
    assert "inside the first's 95 % interval, ci95 (the long-run value; no pi95" in out
    assert "on 3 of 4 (shape, quantity) pairs (75%" in out and cal["interval"] == "ci95"
    assert predict_accuracy.calibration([{"again": {"tpot_p50_s": q(1.0, None)}}]) is None


def test_calibration_uses_pi95_where_the_first_has_one_and_keeps_ci95_beside(
    predict_accuracy: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """The second measurement lands where the next run lands (pi95), not necessarily where
    the long-run value lies (ci95): 1.08 is outside ci95 [0.95, 1.05] and inside pi95
    [0.85, 1.15]. A pair with ci95 alone (one repeat) is judged by it; the ci95 count is
    kept beside (1 of 2 here), and the line says which interval it used."""

    def q(second: float) -> dict[str, Any]:
        return {"predicted": second, "measured": 1.0, "error": 0.0, "ci95": [0.95, 1.05]}

    rows = [
        {"again": {"tpot_p50_s": q(1.08), "pi95": {"tpot_p50_s": [0.85, 1.15]}}},
        {"again": {"ttft_p50_s": q(1.0)}},  # no pi95: its ci95 judges it
    ]
    cal = predict_accuracy.calibration(rows)
    assert (cal["pairs"], cal["covered"], cal["interval"]) == (2, 2, "pi95 and ci95")
    assert (cal["ci95_pairs"], cal["ci95_covered"]) == (2, 1)
    assert cal["half_width_max"] == pytest.approx(0.15)
    predict_accuracy.print_calibration(cal)
    out = capsys.readouterr().out
    assert "95 % interval, pi95 (where the next run lands), ci95 where it has none" in out
    assert "inside the first's ci95 (the long-run value, narrower" in out and "1 of 2" in out
    only_pi = predict_accuracy.calibration(rows[:1])
    assert only_pi["interval"] == "pi95" and only_pi["covered"] == 1


def _measured_level(pa: ModuleType) -> Any:
    """A measured level (the sweep fixture's first), as bench writes it, without intervals."""
    from inferlab.summary import RunSummary

    data = Path(__file__).parent / "data" / "llama_cpu_sweep_summary.json"
    return RunSummary.from_json(json.loads(data.read_text())).levels[0]


def test_compare_keeps_the_first_measurements_pi95(predict_accuracy: ModuleType) -> None:
    """compare(second, first) carries the first's pi95 by the targets' keys (absent: none)."""
    import dataclasses

    from inferlab.summary import Interval, Uncertainty

    first = _measured_level(predict_accuracy)
    p50 = first.tpot_s.p50
    iv = Interval(quantity="tpot_s.p50", value=p50, ci95=(p50, p50), pi95=(p50 * 0.8, p50 * 1.2))
    u = Uncertainty(repeats=3, covers_drift=True, method="m", resamples=10, intervals=(iv,))
    row = predict_accuracy.compare(first, dataclasses.replace(first, uncertainty=u))
    assert row["pi95"] == {"tpot_p50_s": [p50 * 0.8, p50 * 1.2]}
    assert predict_accuracy.compare(first, first)["pi95"] == {}


def test_calibration_also_counts_the_pairs_whose_interval_claims_95_percent(
    predict_accuracy: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """A TTFT p99 from too few requests (tail_undersampled) counts among all pairs, and is
    left out of the pairs whose interval claims 95 %: here 1 of 2 overall, 1 of 1 bounded."""

    def q(second: float) -> dict[str, Any]:
        return {"predicted": second, "measured": 1.0, "error": 0.0, "ci95": [0.9, 1.1]}

    row = {
        "again": {"tpot_p50_s": q(1.0), "ttft_p99_s": q(1.3)},
        "tail_undersampled": ["ttft_p99_s"],
    }
    cal = predict_accuracy.calibration([row])
    assert (cal["pairs"], cal["covered"]) == (2, 1)
    assert (cal["bounded_pairs"], cal["bounded_covered"]) == (1, 1)
    predict_accuracy.print_calibration(cal)
    assert "the 1 pairs whose interval claims 95 %" in capsys.readouterr().out


def test_served_prompt_ratio_is_per_pass_of_a_repeated_shape(
    predict_accuracy: ModuleType, tmp_path: Path
) -> None:
    """bench --repeat 3 sends the shape three times: the server computed as many prompt
    tokens per pass as the simulator (ratio 1.0), not three times as many."""
    for run, repeats in (("predicted", 1), ("measured", 3)):
        w = RecordWriter(tmp_path / run / "records.jsonl")
        for k in range(repeats * 2):
            rec = RequestRecord(k, "c=1", "measure", 40, 8, repeat=k // 2)
            rec.prompt_tokens = 40
            w.write(rec)
        w.close()
    assert predict_accuracy.served_prompt_ratio(tmp_path) == pytest.approx(1.0)


def test_the_prefix_hit_ratio_is_judged_against_the_servers_own_within_5_points(
    predict_accuracy: ModuleType,
) -> None:
    def line(hp: float | None, hs: float | None, pp: float, ps: float | None) -> str | None:
        cache = {
            "hit_ratio_predicted": hp,
            "hit_ratio_server": hs,
            "preemptions_predicted": pp,
            "preemptions_server": ps,
        }
        out: str | None = predict_accuracy.cache_line({"cache": cache})
        return out

    assert "prefix hits predicted 42.0%, server 45.0% within 5 points" in (
        line(0.42, 0.45, 0, 0) or ""
    )
    assert "MISS" in (line(0.30, 0.45, 0, 0) or "")
    both = line(None, 0.2, 14, 16) or ""
    assert "prefix hits predicted -, server 20.0%" in both
    assert "preemptions predicted 14, server 16" in both
    assert line(None, None, 0, None) is None  # llama-server: nothing counted
