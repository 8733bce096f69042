"""Typed summaries: summary.json reads and writes back with exactly its keys."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from inferlab.jsonio import dumps, loads_strict
from inferlab.metrics.level_summary import summarize_level
from inferlab.records import RequestRecord
from inferlab.summary import Interval, LatencyStats, LevelSummary, RunSummary

SWEEP = Path(__file__).parent / "data" / "llama_cpu_sweep_summary.json"


def test_measured_summary_round_trips_with_its_keys_in_order() -> None:
    raw = json.loads(SWEEP.read_text())
    s = RunSummary.from_json(raw)
    assert loads_strict(dumps(s)) == raw
    assert list(s.to_json()) == list(raw)
    assert list(s.levels[0].to_json()) == list(raw["levels"][0])
    lv = s.levels[0]
    assert lv.comparison is not None and lv.comparison.mbu == raw["levels"][0]["mbu"]
    assert lv.client is not None and lv.client.cpu_s == raw["levels"][0]["client"]["cpu_s"]
    assert s.workload.rest["api"] == "completions"  # producer-specific keys are kept


def _level() -> LevelSummary:
    rec = RequestRecord(
        request_id=0,
        level="users=1",
        phase="measure",
        prompt_tokens_target=8,
        max_tokens=3,
        event_ns=[10, 20, 30],
        event_tokens=[1, 1, 1],
        http_status=200,
        finish_reason="length",
    )
    return summarize_level("users=1", "concurrency", 1.0, [rec])


def test_optional_fields_are_absent_when_none_and_read_back_as_none() -> None:
    lv = _level()
    d = lv.to_json()
    for key in ("rate_per_s", "interrupted", "client", "preemptions", "mbu", "floor_batch"):
        assert key not in d
    assert d["prompt_tokens_usage_p50"] is None  # a required field is written even when None
    back = LevelSummary.from_json(d)
    assert back == lv and back.comparison is None and back.interrupted is None


def test_a_new_optional_field_on_a_copy_is_written_and_read() -> None:
    lv = dataclasses.replace(_level(), preemptions=3)
    assert lv.to_json()["preemptions"] == 3
    assert LevelSummary.from_json(lv.to_json()).preemptions == 3


def test_unknown_keys_survive_a_round_trip() -> None:
    d = _level().to_json() | {"added_by_a_later_version": {"x": 1}}
    assert LevelSummary.from_json(d).to_json() == d


def test_latency_stats_of_nothing_is_all_none_with_n_zero() -> None:
    assert _level().queue_delay_s.n == 1
    assert LatencyStats.empty().to_json() == dict.fromkeys(
        ("p50", "p90", "p95", "p99", "p999", "max", "mean"), None
    ) | {"n": 0}


# --- the class is the schema: reading checks every value and names the first bad one ---
def _bad(mutate: object) -> str:
    import pytest

    from inferlab.jsonrecord import SchemaError

    raw = json.loads(SWEEP.read_text())
    mutate(raw)  # type: ignore[operator]
    with pytest.raises(SchemaError) as e:
        RunSummary.from_json(raw)
    return str(e.value)


def test_reading_names_the_key_that_does_not_fit() -> None:
    def text_p50(r: dict) -> None:  # type: ignore[type-arg]
        r["levels"][2]["ttft_s"]["p50"] = "fast"

    def negative_count(r: dict) -> None:  # type: ignore[type-arg]
        r["levels"][0]["requests_ok"] = -1

    def no_label(r: dict) -> None:  # type: ignore[type-arg]
        del r["levels"][1]["label"]

    def odd_severity(r: dict) -> None:  # type: ignore[type-arg]
        r["warnings"] = [{"code": "x", "level": "run", "severity": "grave", "message": "m"}]

    def other_version(r: dict) -> None:  # type: ignore[type-arg]
        r["schema_version"] = 2
        r["levels"] = "not even a list"

    def zero_bandwidth(r: dict) -> None:  # type: ignore[type-arg]
        r["floor"]["bandwidth_bytes_per_s"] = 0

    def huge(r: dict) -> None:  # type: ignore[type-arg]
        r["levels"][0]["output_tokens"] = 10**30

    assert _bad(text_p50) == "levels[2].ttft_s.p50: must be a finite number"
    assert _bad(negative_count) == "levels[0].requests_ok: must be a count (a whole number >= 0)"
    assert _bad(no_label) == "levels[1]: no 'label'"
    assert _bad(odd_severity) == "warnings[0].severity: must be one of 'error', 'warning', 'info'"
    assert _bad(other_version) == "schema_version 2 is not 1"
    assert "bandwidth_bytes_per_s" in _bad(zero_bandwidth)
    assert _bad(huge) == "levels[0].output_tokens: must be a whole number"  # below 2**63


def test_a_simulated_summary_is_a_run_summary(tmp_path: Path) -> None:
    from inferlab.cli import main
    from inferlab.metrics.runfolder import read_summary

    argv = ["simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--users", "3",
            "--output-tokens", "20", "--out", str(tmp_path / "sim")]  # fmt: skip
    assert main(argv) == 0
    s = read_summary(tmp_path / "sim" / "summary.json")
    assert s.simulated and s.server.kind == "simulator" and s.floor is None
    assert s.simulation is not None and s.simulation.policy == "continuous"
    assert s.simulation.step_time_model == "roofline" and s.simulation.rest["efficiency"] == 1.0
    assert s.utilisation is not None and s.utilisation.rows
    assert s.levels[0].label == "c=3" and s.levels[0].requests_ok == 3


def test_itl_is_written_as_itl_and_the_old_gap_key_still_reads() -> None:
    """The inter-token latency is `itl_s` (its name in vLLM, AIPerf and guidellm); a summary
    written before the rename says `gap_s`, and reads the same."""
    raw = json.loads(SWEEP.read_text())
    old = json.loads(json.dumps(raw).replace('"itl_s":', '"gap_s":'))
    assert "gap_s" in old["levels"][0] and "itl_s" not in old["levels"][0]
    a, b = RunSummary.from_json(raw), RunSummary.from_json(old)
    assert a == b
    assert b.levels[0].gap_s.p99 == raw["levels"][0]["itl_s"]["p99"]
    written = b.to_json()["levels"][0]
    assert "itl_s" in written and "gap_s" not in written


def test_an_interval_writes_pi95_when_set_and_an_old_one_reads_without_it() -> None:
    """pi95 (where the next run lands) is optional: an interval written before it, or of one
    repeat, has no key and reads as None; one with it reads back the same, in its unit."""
    old = {"quantity": "tpot_s.p50", "value": 0.02, "ci95": [0.019, 0.021]}
    iv = Interval.from_json(old)
    assert iv.pi95 is None and iv.to_json() == old
    new = dataclasses.replace(iv, pi95=(0.017, 0.023))
    d = new.to_json()
    assert d["pi95"] == [0.017, 0.023] and list(d)[-1] == "pi95"
    assert Interval.from_json(loads_strict(dumps(d))) == new
