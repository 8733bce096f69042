"""What a bench run gives its user beyond the numbers: the plan before it runs, a report to
open, the level table as CSV, request bodies and headers as stated, prompts from their text."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from inferlab.bench.estimate import (
    LevelCost,
    estimate_line,
    level_costs,
    plan_line,
    remaining_line,
    search_plan_line,
)
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from tests.bench.bounded_app import Script, make_app, serve
from tests.clirun import RunCli

SMALL = [
    "--concurrency", "1,2", "--requests-per-level", "3", "--warmup", "1",
    "--prompt-tokens", "8", "--output-tokens", "4", "--no-scrape",
]  # fmt: skip


def test_the_plan_counts_levels_requests_and_tokens() -> None:
    from inferlab.load.lengths import LengthDist

    w = Workload(
        LengthDist.parse("32", "--prompt-tokens", 10**6),
        LengthDist.parse("128", "--output-tokens", 10**6),
        (Level("concurrency", 1), Level("concurrency", 4)),
        requests_per_level=16,
    )
    costs = level_costs(w, list(w.levels))
    assert [(c.label, c.measured, c.warmup, c.streams) for c in costs] == [
        ("c=1", 16, 1, 1),
        ("c=4", 16, 4, 4),
    ]
    assert plan_line(costs) == (
        "plan: 2 level(s) (c=1, c=4): 32 measured requests (+5 warm-up), "
        "1,024 prompt and 4,096 output tokens measured"
    )


def test_the_estimate_is_waves_of_the_request_timed() -> None:
    closed = LevelCost("c=4", 4, 16, 4, 0, 0, 0.0)  # 20 requests on 4 streams: 5 waves
    opened = LevelCost("rate=2/s", None, 20, 2, 0, 0, 9.5)  # the schedule, then one request
    assert closed.lower_bound_s(2.0) == 10.0
    assert opened.lower_bound_s(2.0) == 11.5
    line = estimate_line([closed, opened], 2.0)  # 21.5 s, rounded
    assert remaining_line([opened], 3.0, "c=4") == (
        "estimate: at least 12 s more for rate=2/s (a request took 3.00 s at c=4, the median)"
    )
    assert line.startswith("estimate: at least 22 s for the sweep (one request took 2.00 s")


def test_a_search_states_its_bounds() -> None:
    assert search_plan_line("concurrency", 1, 1e4 * 1e3, 8, 16) == (
        "plan: --find-max-load concurrency from 1 (no set top): at most 8 levels of "
        "16 measured requests each, chosen as it goes"
    )
    assert "from 2 (64)" in search_plan_line("concurrency", 2, 64, 4, 16)


@pytest.mark.slow
def test_a_run_plans_reports_and_writes_csv(run_cli: RunCli, tmp_path: Path) -> None:
    script = Script()
    out, table = tmp_path / "run", tmp_path / "levels.csv"
    with serve(make_app(script)) as base:
        code, stdout, err = run_cli(
            "bench", "--url", f"{base}/v1", *SMALL, "--out", str(out), "--csv", str(table),
            "--extra-body", '{"top_k": 1}', "--header", "X-Team: inference",
        )  # fmt: skip
    assert code == 0, err
    assert "plan: 2 level(s) (c=1, c=2): 6 measured requests (+2 warm-up)" in err
    assert "estimate: at least" in stdout  # above the progress bar, once one request is timed
    assert re.search(r"estimate: at least \d+\.\d s more for c=2 \(a request took", stdout)
    assert f"report: {out}/report.html" in stdout and f"inferlab report {out}" in stdout
    assert (out / "report.html").stat().st_size > 1000
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    summary = json.loads((out / "summary.json").read_text())
    assert [r["level"] for r in rows] == ["c=1", "c=2"]
    for row, lv in zip(rows, summary["levels"], strict=True):
        assert float(row["requests_per_s"]) == pytest.approx(lv["requests_per_s"])
        assert float(row["itl_p99_s"]) == pytest.approx(lv["itl_s"]["p99"])
        # 3 requests of 8 prompt (usage) + 4 output tokens over the level's window
        assert lv["total_tokens_per_s"] == pytest.approx(3 * (8 + 4) / lv["window_s"])
        assert lv["requests_per_s"] == pytest.approx(3 / lv["window_s"])
    assert all(b["top_k"] == 1 for b in script.bodies)
    assert all(h.get("X-Team") == "inference" for h in script.headers)
    assert summary["workload"]["extra_body"] == {"top_k": 1}
    assert summary["workload"]["headers"] == ["X-Team"]  # the name only: values may be keys


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--extra-body", "[1]", "give a JSON object"),
        ("--extra-body", '{"stream": false}', "stream: bench sets these itself"),
        ("--extra-body", "{", "is not JSON"),
        ("--header", "no-colon", "write NAME:VALUE"),
    ],
)
def test_bad_body_and_headers_are_refused(
    run_cli: RunCli, flag: str, value: str, says: str
) -> None:
    code, _, err = run_cli("bench", "--url", "http://127.0.0.1:9/v1", flag, value)
    assert code == 2 and flag in err and says in err


@pytest.mark.slow
def test_prompts_cut_from_the_users_text(run_cli: RunCli, tmp_path: Path) -> None:
    text = "the quick brown fox jumps over the lazy dog while seven wizards quietly hex it"
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"prompt": text}) + "\n\n" + json.dumps({"text": text}) + "\n")
    script = Script()
    with serve(make_app(script)) as base:
        code, _, err = run_cli(
            "bench", "--url", f"{base}/v1", *SMALL, "--prompts", str(prompts),
            "--out", str(tmp_path / "r"), "--no-plots", "--no-report", "--no-canary",
        )  # fmt: skip
    assert code == 0, err
    words = set(text.split())
    sent = [str(b["prompt"]).split() for b in script.bodies[1:]]  # [0]: the first-stream check
    assert sent and all(len(p) == 8 for p in sent)  # /tokenize answers 404 here: words
    assert all(set(p[3:]) <= words for p in sent)  # after the 3 words unique to each


def test_a_prompts_file_that_is_not_jsonl_names_its_line(run_cli: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"prompt": "fine"}\nnot json\n')
    code, _, err = run_cli("bench", "--url", "http://127.0.0.1:9/v1", "--prompts", str(bad))
    assert code == 2 and f"{bad}:2" in err and err.strip().count("\n") == 0
