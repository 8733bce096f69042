"""bench --repeat N against the scripted fake server: interleaved order, fresh prompts per
repeat, every repeat kept in summary.json with the level's intervals, and the table's ±."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, BenchResult, event_loop_runner, run_benchmark
from inferlab.bench.estimate import level_costs, plan_line
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.records import RequestRecord, read_records
from inferlab.report.console import print_sweep
from inferlab.summary import RunSummary

from .conftest import fake_server

DATA = Path(__file__).parents[1] / "data"


def _workload(levels: tuple[int, ...] = (1, 2), n: int = 6) -> Workload:
    return Workload.fixed(
        prompt_tokens=16,
        output_tokens=12,
        levels=[Level("concurrency", c) for c in levels],
        requests_per_level=n,
    )


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BenchResult]:
    """One run of c=1, c=2, three repeats of 6 requests each."""
    out = tmp_path_factory.mktemp("repeat")
    with fake_server(ttft=0.01, tpot=0.004, slow_every=0) as url:
        cfg = BenchConfig(url=url, model="fake", load=_workload(), out_dir=out, repeats=3)
        yield event_loop_runner()(run_benchmark(cfg))


@pytest.mark.slow
def test_levels_run_interleaved(repeated: BenchResult) -> None:
    recs = sorted(read_records(repeated.records_path), key=lambda r: r.send_ns)
    order: list[tuple[str, int]] = []
    for r in recs:
        if not order or order[-1] != (r.level, r.repeat):
            order.append((r.level, r.repeat))
    assert order == [(lv, k) for k in range(3) for lv in ("c=1", "c=2")]


@pytest.mark.slow
def test_every_repeat_sends_fresh_prompts(repeated: BenchResult) -> None:
    recs = read_records(repeated.records_path)
    for level in ("c=1", "c=2"):
        seen = [
            {r.prompt_sha1 for r in recs if r.level == level and r.repeat == k} for k in range(3)
        ]
        assert all(len(s) >= 6 for s in seen)
        assert not (seen[0] & seen[1]) and not (seen[1] & seen[2]) and not (seen[0] & seen[2])


@pytest.mark.slow
def test_summary_keeps_each_repeat_and_the_intervals(repeated: BenchResult) -> None:
    d = json.loads(repeated.summary_path.read_text())
    assert [lv["label"] for lv in d["levels"]] == ["c=1", "c=2"]
    for lv in d["levels"]:
        assert lv["requests_measured"] == 18 and lv["requests_ok"] == 18
        assert [r["repeat"] for r in lv["repeats"]] == [0, 1, 2]
        assert sum(r["requests_ok"] for r in lv["repeats"]) == 18
        assert lv["window_s"] == pytest.approx(sum(r["window_s"] for r in lv["repeats"]))
        u = lv["uncertainty"]
        assert u["repeats"] == 3 and u["covers_drift"] is True
        got = {i["quantity"]: i for i in u["intervals"]}
        assert {"ttft_s.p50", "ttft_s.p99", "tpot_s.p50", "output_tokens_per_s_total"} <= set(got)
        for iv in got.values():
            lo, hi = iv["ci95"]
            assert 0.0 <= lo <= iv["value"] <= hi
            assert iv["cv_across_repeats"] is not None and iv["cv_across_repeats"] >= 0
        assert got["tpot_s.p50"]["value"] == lv["tpot_s"]["p50"]
    RunSummary.from_json(d)  # the file reads back


@pytest.mark.slow
def test_the_table_shows_the_interval(repeated: BenchResult) -> None:
    out = io.StringIO()
    print_sweep(repeated.summary, file=out)
    text = out.getvalue()
    assert "±" in text or "[" in text
    assert "3 repeats per level, interleaved" in text


@pytest.mark.slow
def test_a_p99_of_18_requests_is_flagged_and_its_cell_has_no_upper_end(
    repeated: BenchResult,
) -> None:
    """18 requests per level bound a p50 (6 do) but not a p99 (368 would): the p99's
    interval says tail_undersampled, its table cell ends in `?`, and a line says why."""
    d = json.loads(repeated.summary_path.read_text())
    for lv in d["levels"]:
        got = {i["quantity"]: i for i in lv["uncertainty"]["intervals"]}
        assert got["ttft_s.p99"]["tail_undersampled"] is True
        assert "tail_undersampled" not in got["ttft_s.p50"]
        assert "tail_undersampled" not in got["output_tokens_per_s_total"]
    out = io.StringIO()
    print_sweep(repeated.summary, wide=True, file=out)
    text = out.getvalue()
    assert ", ?]" in text and "a 95 % upper bound needs 368 requests for p99" in text
    narrow = io.StringIO()  # no TTFT p99 column there: no `?`, and no line about it
    print_sweep(repeated.summary, file=narrow)
    assert "?]" not in narrow.getvalue() and "368 requests" not in narrow.getvalue()


def test_one_repeat_says_it_does_not_cover_drift(tmp_path: Path) -> None:
    d = json.loads((DATA / "llama_cpu_sweep_summary.json").read_text())
    lv = d["levels"][0]
    p50 = lv["tpot_s"]["p50"]
    lv["uncertainty"] = {
        "repeats": 1,
        "covers_drift": False,
        "method": "bootstrap over requests",
        "resamples": 2000,
        "intervals": [{"quantity": "tpot_s.p50", "value": p50, "ci95": [p50 - 0.001, p50 + 0.001]}],
    }
    out = io.StringIO()
    print_sweep(RunSummary.from_json(d), file=out)
    text = out.getvalue()
    assert f"{p50 * 1e3:.1f} ±1.0" in text
    assert "not the machine's drift between runs" in " ".join(text.split())
    assert "[low, high] where it is skewed" in " ".join(text.split())


def test_an_old_summary_still_reads_and_says_it_has_no_intervals() -> None:
    d = json.loads((DATA / "llama_cpu_sweep_summary.json").read_text())
    assert all("uncertainty" not in lv for lv in d["levels"])
    summary = RunSummary.from_json(d)
    assert all(lv.uncertainty is None and lv.repeats is None for lv in summary.levels)
    out = io.StringIO()
    print_sweep(summary, file=out)
    assert "no intervals: this summary predates them" in out.getvalue()
    assert "±" not in out.getvalue()


def test_old_records_read_as_repeat_0_and_new_ones_say_theirs() -> None:
    old = RequestRecord(1, "c=1", "measure", 16, 12).to_json()
    assert "repeat" not in old  # a run without --repeat writes the records it always wrote
    assert RequestRecord.from_json(old).repeat == 0
    rec = RequestRecord(1, "c=1", "measure", 16, 12, repeat=2)
    assert RequestRecord.from_json(rec.to_json()).repeat == 2


def test_the_plan_says_what_repeats_cost() -> None:
    w = _workload(n=16)
    line = plan_line(level_costs(w, list(w.levels)), 3)
    assert line.startswith("plan: 2 level(s) (c=1, c=2): 96 measured requests")
    assert "--repeat 3: each level 3 times, interleaved" in line
    assert "about 3 times as long as one sweep" in line


def test_skewed_intervals_keep_the_narrow_table_within_100_columns() -> None:
    """Both ends of a skewed interval go under the value: every column, MBU included, shows."""
    d = json.loads((DATA / "llama_cpu_sweep_summary.json").read_text())
    for lv in d["levels"]:
        ivs = []
        for q in ("ttft_s.p50", "tpot_s.p50"):
            v = lv[q.split(".")[0]]["p50"]
            ivs.append({"quantity": q, "value": v, "ci95": [v * 0.9, v * 1.6]})
        v = lv["output_tokens_per_s_total"]
        ivs.append({"quantity": "output_tokens_per_s_total", "value": v, "ci95": [v / 2, v]})
        lv["uncertainty"] = {
            "repeats": 3, "covers_drift": True, "method": "m", "resamples": 2000,
            "intervals": ivs,
        }  # fmt: skip
    out = io.StringIO()
    print_sweep(RunSummary.from_json(d), file=out)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 100
    assert any(line.rstrip().endswith("24%") for line in lines)  # c=1's MBU, not cut
    assert any("[2087.1, 3710.4]" in line for line in lines)  # c=16's TTFT p50 interval


@pytest.mark.slow
def test_a_later_repeat_shares_its_prefix_only_with_itself(tmp_path: Path) -> None:
    """--prefix-groups 1 against the fake that caches prompts (cache_n): within each repeat
    the first request computes the shared prefix and the next find it cached; the second
    repeat's first request finds nothing the first repeat left (its prefix text is salted
    with its own seed), so both repeats are the same measurement."""
    from inferlab.load.workload import Prefix
    from inferlab.testing.fake_steps import MODEL, StepScript, running_fake_steps

    script = StepScript(base_s=0.001, per_decode_s=0.0, request_overhead_s=0.0, slots=1)
    load = dataclasses.replace(_workload((1,), 3), prefix=Prefix(1, 24), warmup=0)
    with running_fake_steps(script) as url:
        cfg = BenchConfig(url=url, model=MODEL, load=load, out_dir=tmp_path, repeats=2)
        cfg = dataclasses.replace(cfg, canary=False)
        res = event_loop_runner()(run_benchmark(cfg))
    recs = sorted(read_records(res.records_path), key=lambda r: r.send_ns)
    for k in (0, 1):
        cached = [r.cached_prompt_tokens_server for r in recs if r.repeat == k]
        assert len(cached) == 3
        assert cached[0] is not None and cached[0] < 24  # cold: the prefix computed
        assert all(c is not None and c >= 24 for c in cached[1:])  # then found cached
