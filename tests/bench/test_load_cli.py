"""One load, measured and simulated: the same flags give the same requests on both sides.

bench runs against the fake server and simulate writes its records; the measured
requests of each (lengths, prefix groups, scheduled instants after the level's first)
are compared one by one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

SIM = ("simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm")


def _records(folder: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    return sorted((r for r in rows if r["phase"] == "measure"), key=lambda r: r["request_id"])


def _specs(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    t0 = rows[0]["scheduled_ns"]
    return [
        (r["prompt_tokens_target"], r["max_tokens"], round((r["scheduled_ns"] - t0) / 1e3))
        for r in rows
    ]


@pytest.mark.parametrize(
    "load",
    [
        ("--rate", "40", "--burstiness", "0.5", "--prompt-tokens", "uniform:5:60"),
        ("--rate", "30", "--arrival", "constant", "--prefix-groups", "3", "--prefix-tokens", "8"),
    ],
)
def test_bench_sends_what_simulate_simulates(
    run_cli: Any, fake_url: str, tmp_path: Path, load: tuple[str, ...]
) -> None:
    flags = (*load, "--output-tokens", "uniform:2:9", "--requests-per-level", "12", "--seed", "5")
    code, _, err = run_cli(
        "bench", "--url", fake_url, *flags, "--out", str(tmp_path / "b"), "--no-plots"
    )
    assert code == 0, err
    code, _, err = run_cli(*SIM, *flags, "--out", str(tmp_path / "s"))
    assert code == 0, err
    measured, simulated = _records(tmp_path / "b"), _records(tmp_path / "s")
    assert len(measured) == len(simulated) == 12
    assert _specs(measured) == _specs(simulated)  # lengths and instants, to the microsecond
    assert all(r["prompt_tokens"] == r["prompt_tokens_target"] for r in measured)  # exact
    if "--prefix-groups" in load:
        assert {r["prefix_group"] for r in measured} <= {0, 1, 2}
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    level = summary["levels"][0]
    assert level["offered_rate_per_s"] > 0 and level["schedule_lag_s"]["n"] == 12
    assert "prefix_cache_hit" not in {w["code"] for w in summary["warnings"]}


def test_warmup_zero_for_every_kind(run_cli: Any, fake_url: str, tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp_s,prompt_tokens,output_tokens\n0,5,3\n0.05,6,3\n0.1,7,3\n")
    for i, load in enumerate(
        [
            ("--concurrency", "2"),
            ("--rate", "50"),
            ("--trace", str(trace)),
            ("--concurrency", "2", "--turns", "2"),
        ]
    ):
        out = tmp_path / f"r{i}"
        code, _, err = run_cli(
            "bench",
            "--url",
            fake_url,
            *load,
            "--warmup",
            "0",
            "--requests-per-level",
            "4",
            "--output-tokens",
            "3",
            "--prompt-tokens",
            "5",
            "--out",
            str(out),
            "--no-plots",
        )
        assert code == 0, (load, err)
        rows = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
        assert rows and all(r["phase"] == "measure" for r in rows), load


def test_conversations_are_the_same_turns_on_both_sides(
    run_cli: Any, fake_url: str, tmp_path: Path
) -> None:
    flags = ("--concurrency", "2", "--turns", "3", "--think-time", "10ms", "--requests-per-level")
    flags = (*flags, "7", "--prompt-tokens", "uniform:3:9", "--output-tokens", "uniform:2:5")
    code, _, err = run_cli("bench", "--url", fake_url, *flags, "--out", str(tmp_path / "b"))
    assert code == 0, err
    code, _, err = run_cli(*SIM, *flags, "--out", str(tmp_path / "s"))
    assert code == 0, err

    def turns(folder: Path) -> list[tuple[Any, ...]]:
        rows = _records(folder)
        keys = ("conversation_id", "turn", "prompt_tokens_target", "max_tokens")
        return sorted(tuple(r[k] for k in keys) for r in rows)

    measured = turns(tmp_path / "b")
    assert measured == turns(tmp_path / "s")
    assert [t[:2] for t in measured] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0)]
    for folder in ("b", "s"):
        level = json.loads((tmp_path / folder / "summary.json").read_text())["levels"][0]
        assert [t["turn"] for t in level["per_turn"]] == [0, 1, 2]
