"""The drift canary (bench/canary.py): one fixed request at rest and after every level, its
TPOT the machine's speed; machine_drift on a level measured while it moved beyond its noise
(metrics/checks.py), the host's steal time per level (bench/hoststat.py), --no-canary.

The machine that slows down is the scripted fake llama-server (testing/fake_steps.py):
from a request count the test sets, every step lasts 30 % longer, so which levels ran
before and after the slowdown is fixed by the order of requests, never by the clock."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, BenchResult, event_loop_runner, run_benchmark
from inferlab.bench.canary import (
    CANARY_PROMPT,
    CanaryLog,
    Taken,
    canary_block,
    canary_endpoint,
    drift_warning,
)
from inferlab.bench.client import Endpoint
from inferlab.bench.estimate import LevelCost, plan_line, with_canary
from inferlab.bench.hoststat import CpuTicks, host_level, parse_cpu_line, read_cpu_ticks
from inferlab.bench.runner import LevelRun
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.metrics.checks import CanaryAround, canary_moved, drift_threshold, machine_drift
from inferlab.metrics.runfolder import read_summary
from inferlab.report.canary_plot import level_spans
from inferlab.report.canary_text import canary_lines
from inferlab.summary import RunSummary
from inferlab.testing.fake_steps import StepScript, running_fake_steps
from tests.clirun import RunCli
from tests.fakeslots import slot_tasks

DATA = Path(__file__).parents[1] / "data"

# Every step 100 ms whatever it holds: the canary's TPOT is the step time, 130 ms once slow
# (long steps: a busy test machine's few ms of scheduling delay stay well inside 5 %).
STEADY = StepScript(
    base_s=0.1,
    per_decode_s=0.0,
    per_context_token_s=0.0,
    per_prompt_token_s=0.0,
    per_kilo_pair_s=0.0,
    per_ubatch_s=0.0,
    request_overhead_s=0.001,
    request_per_prompt_token_s=0.0,
    slots=4,
)
# Requests: 1 the stream check, 2-4 the canaries at rest, then per level 4 requests and
# the canary after it: c=1 5-8 (9), c=2 10-13 (14), c=3 15-18 (19), c=4 20-23 (24).
# Slower from request 12 on: in the middle of c=2.
SLOWS_IN_C2 = dataclasses.replace(STEADY, slower_after=11, slower_by=0.3)


def _run(url: str, out: Path) -> BenchResult:
    load = Workload.fixed(
        prompt_tokens=8,
        output_tokens=4,
        levels=[Level("concurrency", c) for c in (1, 2, 3, 4)],
        requests_per_level=4,
        warmup=0,
    )
    # no settling requests: the request count above has none
    cfg = BenchConfig(url=url, model=None, load=load, out_dir=out, scrape=False, settle_slots=False)
    return event_loop_runner()(run_benchmark(cfg))


@pytest.mark.slow
def test_a_machine_that_slows_halfway_drifts_the_levels_after_it(tmp_path: Path) -> None:
    with running_fake_steps(SLOWS_IN_C2) as url:
        res = _run(url, tmp_path)
        tasks = slot_tasks(url)
    s = read_summary(res.summary_path)  # what summary.json says, read back
    drift = {w.level: w.message for w in s.warnings if w.code == "machine_drift"}
    assert sorted(drift) == ["c=2", "c=3", "c=4"], s.canary  # none before the slowdown
    assert "while this level ran" in drift["c=2"]  # slowed between its two canaries
    assert "at rest at the start (+" in drift["c=3"]  # slow before and after: vs the rest
    moved = re.search(r"at the start \(\+(\d+) %\)", drift["c=4"])
    assert moved is not None and 25 <= int(moved.group(1)) <= 35  # the script's 30 %
    c = s.canary
    assert c is not None and c.slot == 0 and c.output_tokens == 16
    assert c.prompt == CANARY_PROMPT
    assert [r.at_rest for r in c.readings] == [True] * 3 + [False] * 4
    assert [r.before for r in c.readings] == ["c=1"] * 3 + ["c=2", "c=3", "c=4", None]
    assert [r.at_s for r in c.readings] == sorted(r.at_s for r in c.readings)
    rest = c.rest_tpot_ms
    assert rest is not None and 95.0 <= rest < 110.0  # a 100 ms step, as the client read it
    tpot = [r.tpot_ms or 0.0 for r in c.readings]
    assert all(abs(t / rest - 1) < 0.05 for t in tpot[:4])  # at rest and after c=1
    assert all(t / rest > 1.2 for t in tpot[4:])  # 30 % slower steps from c=2 on
    assert c.drift_threshold == pytest.approx(drift_threshold(c.rest_spread))
    assert tasks[0] == 24  # slot 0 served the last canary (the 24th request), as every one
    if read_cpu_ticks() is not None:  # Linux: each level's steal time beside its client CPU
        for lv in s.levels:
            assert lv.host is not None and 0.0 <= lv.host.cpu_steal_fraction <= 1.0
    assert canary_lines(s)[1] == "machine_drift: c=2, c=3, c=4 (the warnings say by how much)"


@pytest.mark.parametrize(
    ("around", "threshold", "said"),
    [
        # moved while the level ran: the reading after it against the one before
        (CanaryAround(41.2, 53.8, 41.0), 0.05, "canary TPOT 41.2 -> 53.8 ms (+31 %) while this"),
        (CanaryAround(50.0, 40.0, 50.0), 0.05, "canary TPOT 50.0 -> 40.0 ms (-20 %) while this"),
        # slow before and after: the farther one against the rest's median
        (CanaryAround(53.8, 54.0, 41.2), 0.05, "canary TPOT 54.0 ms around this level against "
         "41.2 ms at rest at the start (+31 %)"),
        (CanaryAround(None, 50.0, 40.0), 0.05, "canary TPOT 50.0 ms around this level against"),
        # within the noise: 4.4 % under 5 %, but over 3 x a 1 % spread's 3 %
        (CanaryAround(41.2, 43.0, 41.0), 0.05, None),
        (CanaryAround(41.2, 43.0, 41.0), drift_threshold(0.01), None),
        (CanaryAround(41.2, 43.0, 41.0), 0.03, "41.2 -> 43.0 ms (+4 %)"),
        (CanaryAround(None, None, 40.0), 0.05, None),
        (CanaryAround(40.0, 48.0, None), 0.05, "40.0 -> 48.0 ms (+20 %)"),
        (CanaryAround(40.0, 41.0, None), 0.05, None),
    ],
)  # fmt: skip
def test_the_drift_rule(around: CanaryAround, threshold: float, said: str | None) -> None:
    got = canary_moved(around, threshold)
    assert (got is None) == (said is None), got
    assert said is None or (got is not None and said in got)


def test_the_threshold_is_three_rest_spreads_or_five_percent() -> None:
    assert drift_threshold(None) == 0.05
    assert drift_threshold(0.01) == 0.05
    assert drift_threshold(0.03) == pytest.approx(0.09)
    assert machine_drift("c=2", [], 0.05) is None
    w = machine_drift("c=2", ["canary TPOT 41.2 -> 53.8 ms (+31 %) while this level ran"], 0.09)
    assert w is not None and (w.code, w.level, w.severity) == ("machine_drift", "c=2", "warning")
    assert w.message.startswith("canary TPOT 41.2 -> 53.8 ms (+31 %) while this level ran: ")
    assert "a move over 9.0 %" in w.message


def _runs(*labels: tuple[str, int]) -> list[LevelRun]:
    return [LevelRun(Level("concurrency", float(lab[2:])), repeat=k) for lab, k in labels]


def test_the_readings_name_the_level_they_preceded_and_repeats_drift_apart() -> None:
    runs = _runs(("c=1", 0), ("c=2", 0), ("c=1", 1), ("c=2", 1))
    log = CanaryLog(canary_endpoint(Endpoint("http://h/v1", "m", server_kind="vllm")))
    rest = [Taken(0.1, 40.0, -1), Taken(0.8, 41.0, -1), Taken(1.5, 40.2, -1)]
    after = [Taken(3.0, 40.5, 0), Taken(5.0, 40.1, 1), Taken(7.0, None, 2, "HTTP 500: x")]
    log.taken = [*rest, *after, Taken(9.0, 52.0, 3)]
    assert log.rest_median_ms() == 40.2
    assert log.rest_spread() == pytest.approx(1.0 / 40.2)
    assert log.around(0) == CanaryAround(40.2, 40.5, 40.2)  # the last at rest, the one after
    assert log.around(3) == CanaryAround(None, 52.0, 40.2)  # the one before it failed
    block = canary_block(log, runs)
    assert block.slot is None  # not llama-server: no slot to pin it to
    assert [(r.before, r.repeat) for r in block.readings] == [
        ("c=1", 0), ("c=1", 0), ("c=1", 0), ("c=2", 0), ("c=1", 1), ("c=2", 1), (None, None),
    ]  # fmt: skip
    assert block.readings[5].error == "HTTP 500: x" and block.readings[5].tpot_ms is None
    assert drift_warning(log, [runs[0], runs[2]], runs) is None
    w = drift_warning(log, [runs[1], runs[3]], runs)
    assert w is not None and w.level == "c=2"
    assert w.message.startswith("run 2 of 2: canary TPOT 52.0 ms around this level against 40.2")
    assert [s.label for s in level_spans(block)] == ["c=1", "c=2", "c=1", "c=2"]
    assert level_spans(block)[0].start_s == 1.5 and level_spans(block)[-1].end_s == 9.0


def test_the_canary_is_pinned_to_a_llama_servers_slot_and_bounded() -> None:
    ep = Endpoint("http://h/v1", "m", api="chat", force_length=False, server_kind="llamacpp",
                  request_timeout_s=600.0, cache_prompt=True,
                  extra_body_json='{"a": 1}')  # fmt: skip
    c = canary_endpoint(ep)
    assert json.loads(c.extra_body_json) == {"id_slot": 0}
    assert (c.api, c.cache_prompt, c.force_length, c.request_timeout_s) == (
        "completions", False, True, 30.0,
    )  # fmt: skip
    other = canary_endpoint(Endpoint("http://h/v1", "m", api="chat", request_timeout_s=5.0))
    assert (other.api, other.extra_body_json, other.request_timeout_s) == ("chat", "", 5.0)


def test_steal_time_from_proc_stat() -> None:
    text = "cpu  100 0 50 800 10 0 0 40 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 5\n"
    start = parse_cpu_line(text)
    assert start == CpuTicks(steal=40, total=1000)  # guest (7) is inside user already
    end = CpuTicks(steal=70, total=1300)
    assert (end - start).steal_fraction == pytest.approx(0.1)
    assert CpuTicks(0, 0).steal_fraction is None and host_level(CpuTicks(0, 0)) is None
    host = host_level(end - start)
    assert host is not None and host.cpu_steal_fraction == pytest.approx(0.1)
    assert parse_cpu_line("intr 5\n") is None
    assert read_cpu_ticks(Path("/no/such/proc/stat")) is None  # not Linux: nothing


def test_old_summaries_without_a_canary_still_read() -> None:
    raw = json.loads((DATA / "llama_cpu_sweep_summary.json").read_text())
    assert "canary" not in raw and all("host" not in lv for lv in raw["levels"])
    s = RunSummary.from_json(raw)
    assert s.canary is None and all(lv.host is None for lv in s.levels)
    assert canary_lines(s) == []  # the report says nothing of a canary it never had


def test_the_plan_counts_the_canary() -> None:
    costs = [LevelCost("c=1", 1, 4, 0, 32, 64, 0.0), LevelCost("c=2", 2, 4, 0, 32, 256, 0.0)]
    plan = with_canary(costs * 2, True)  # --repeat 2
    assert [c.canaries for c in plan] == [4, 1, 1, 1]  # 3 at rest, then one after each
    assert with_canary(costs, False) == costs
    # c=1: 4 waves of 1 s, and 4 canaries of 16 tokens where a request has 16: 1 s each
    assert plan[0].lower_bound_s(1.0) == pytest.approx(8.0)
    # c=2: 2 waves, and one canary a quarter of a 64-token request
    assert plan[1].lower_bound_s(1.0) == pytest.approx(2.25)
    line = plan_line(costs, 2, canary=True)
    assert line.endswith(
        "; +7 drift-canary requests of 16 tokens, one at a time (3 at rest, then one after "
        "each level; --no-canary: none)"
    )
    assert "canary" not in plan_line(costs, 2)


@pytest.mark.slow
def test_bench_sends_the_canary_by_default_and_none_with_no_canary(
    tmp_path: Path, run_cli: RunCli, fake_url: str
) -> None:
    args = ["bench", "--url", fake_url, "--concurrency", "1,2", "--requests-per-level", "2",
            "--output-tokens", "4", "--no-scrape", "--json"]  # fmt: skip
    code, out, err = run_cli(*args, "--out", str(tmp_path / "a"))
    assert code == 0, err
    c = json.loads(out)["canary"]
    assert [r["before"] for r in c["readings"]] == ["c=1"] * 3 + ["c=2", None]
    assert c["slot"] is None and all(r["tpot_ms"] > 0 for r in c["readings"])
    assert "+5 drift-canary requests of 16 tokens" in err  # the plan, before level 1
    assert (tmp_path / "a" / "canary.png").exists()
    assert "drift canary" in (tmp_path / "a" / "report.html").read_text()
    code, out, err = run_cli(*args, "--no-canary", "--no-plots", "--out", str(tmp_path / "b"))
    assert code == 0, err
    assert "canary" not in json.loads(out) and "drift-canary" not in err
