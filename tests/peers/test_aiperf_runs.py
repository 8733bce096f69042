"""AIPerf 0.13's `--num-profile-runs 3` folder (tests/fixtures/peers/aiperf-0.13.0/c4-3runs:
c=4, 16 requests of 32 -> 64 tokens, the same prompts each run, so runs 2 and 3 came from
llama-server's prompt cache): each run read as a single run is, the cache-served runs named
and left out of the combined level, inferlab's interval beside AIPerf's, none below zero."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from inferlab.peers.common import PeerFormatError, PeerRun
from inferlab.peers.detect import read_peer
from inferlab.peers.judge import summarise
from inferlab.peers.repeat_records import RepeatsBlock
from inferlab.peers.repeats import combine
from inferlab.physics.floor import Floor
from inferlab.report.inputs import peer_file_in, read_input
from inferlab.report.interval_text import interval_lines
from inferlab.specs.hardware import STATED, with_overrides
from inferlab.specs.stated import cost_from
from tests.clirun import RunCli

HERE = Path(__file__).parents[1] / "fixtures" / "peers" / "aiperf-0.13.0"
RUNS3 = HERE / "c4-3runs"
AGGREGATE = RUNS3 / "aggregate" / "profile_export_aiperf_aggregate.json"
LABELS = ("run_0001", "run_0002", "run_0003")
# AIPerf's name -> inferlab's, for the statistics both state per run
METRICS = {
    "time_to_first_token": "ttft_s",
    "inter_token_latency": "tpot_s",
    "request_latency": "e2e_s",
}


def _written(label: str) -> dict[str, Any]:
    path = RUNS3 / "profile_runs" / label / "profile_export_aiperf.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _floor(flops_per_s: float) -> Floor:
    """SmolLM2-135M (the served model's shape) at a stated FLOP/s: 32 prompt tokens take
    8.64 GFLOP, so 86.4 ms at 100 GFLOP/s."""
    return Floor(cost_from("smollm2-135m"), with_overrides(STATED, 10e9, flops_per_s))


def _block(s: Any) -> RepeatsBlock:
    return RepeatsBlock.from_json(s.extra["peer_repeats"])


def test_the_folder_stands_for_its_aggregate() -> None:
    assert peer_file_in(RUNS3) == AGGREGATE
    assert peer_file_in(HERE / "c4") == HERE / "c4" / "profile_export.jsonl"


@pytest.mark.parametrize("i", range(3))
def test_each_run_as_aiperf_wrote_it(i: int) -> None:
    """The tool's own figures of each run are the numbers in its profile_export_aiperf.json;
    those recomputed from its records agree for TTFT and E2E (TPOT too where AIPerf's
    tokenizer counted the output as the server did: run_0002)."""
    run = _block(summarise(read_peer(AGGREGATE))).runs[i]
    data = _written(LABELS[i])
    assert run.label == LABELS[i] and run.as_written is not None
    for name, q in METRICS.items():
        for p in ("p50", "p90", "p99"):
            want_ms = data[name][p]
            assert getattr(getattr(run.as_written, q), p) * 1e3 == pytest.approx(want_ms, rel=1e-12)
            if q != "tpot_s" or LABELS[i] == "run_0002":
                assert getattr(getattr(run.stats, q), p) * 1e3 == pytest.approx(want_ms, rel=1e-9)
    tok_s = data["output_token_throughput"]["avg"]
    assert run.as_written.output_tokens_per_s_total == pytest.approx(tok_s, rel=1e-12)
    assert run.stats.requests_ok == data["request_count"]["avg"] == 16


def test_runs_two_and_three_are_named_cache_served() -> None:
    """No floor: the rule against run 1 (TTFT p50 78 and 77 ms against 884 ms), with the
    server's counters (31 of 32 prompt tokens read from its cache) saying why."""
    s = summarise(read_peer(AGGREGATE))
    block = _block(s)
    assert [r.verdict for r in block.runs] == ["same_measurement", "cache_served", "cache_served"]
    assert block.kept == ("run_0001",) and block.apart == ("run_0002", "run_0003")
    assert [r.prompt_cache_share for r in block.runs] == [0.0, 31 / 32, 31 / 32]
    two = block.runs[1]
    assert two.reason is not None and "under half of run_0001's 883.7 ms" in two.reason
    assert two.ttft_fastest_s == pytest.approx(0.035434648) and two.fastest_line == 1
    named = [w for w in s.warnings if w.code == "repeat_cache_served"]
    assert [w.message.split(":")[0] for w in named] == ["run_0002", "run_0003"]
    assert all("left out of the combined level" in w.message for w in named)


def test_the_floor_names_them_too() -> None:
    """At 100 GFLOP/s a 32-token prefill takes 86.4 ms: runs 2 and 3 (p50 78.0, 76.6 ms)
    beat it; at 1 TFLOP/s (8.6 ms) they do not, and the rule against run 1 still names them."""
    slow = _block(summarise(read_peer(AGGREGATE), _floor(100e9)))
    assert [r.prefill_floor_s for r in slow.runs] == [pytest.approx(0.0864324)] * 3
    assert "below the 86.4 ms that prefilling 32 prompt tokens" in (slow.runs[1].reason or "")
    assert slow.runs[0].verdict == "same_measurement"
    fast = _block(summarise(read_peer(AGGREGATE), _floor(1e12)))
    assert [r.verdict for r in fast.runs] == ["same_measurement", "cache_served", "cache_served"]
    assert "below the" not in (fast.runs[1].reason or "")


def test_the_combined_level_is_run_one_alone() -> None:
    s = summarise(read_peer(AGGREGATE))
    (lv,) = s.levels
    assert lv.label == "c=4" and lv.requests_ok == 16
    assert lv.ttft_s.p50 == pytest.approx(0.8837058855, rel=1e-9)
    assert lv.repeats is not None and [r.repeat for r in lv.repeats] == [0]
    u = lv.uncertainty
    assert u is not None and u.repeats == 1 and not u.covers_drift
    iv = u.of("ttft_s.p50")
    assert iv is not None and iv.ci95[0] <= 0.8837058855 <= iv.ci95[1]
    assert lv.source is not None and lv.source.file == str(AGGREGATE)


def test_aiperfs_interval_beside_ours_clipped_at_zero() -> None:
    """AIPerf wrote TTFT p50: mean 346.1 ms, CI [-810.5, 1502.7] ms over all three runs."""
    tool = _block(summarise(read_peer(AGGREGATE))).tool
    assert tool is not None and tool.runs == 3 and tool.confidence == 0.95
    iv = tool.of("ttft_s.p50")
    assert iv is not None and iv.mean == pytest.approx(0.3460882635)
    assert iv.ci == (0.0, pytest.approx(1.5026805964))
    assert iv.low_as_written == pytest.approx(-0.8105040694)
    itl = tool.of("tpot_s.p50")
    assert itl is not None and itl.ci == (pytest.approx(0.0272698738), pytest.approx(0.0606729002))
    assert itl.low_as_written is None and itl.cv == pytest.approx(0.1529009, rel=1e-6)


def _bounds(doc: object) -> list[float]:
    """Every interval bound (`ci95`, `ci`) anywhere in a JSON document."""
    if isinstance(doc, dict):
        own = [x for k in ("ci95", "ci") if isinstance(doc.get(k), list) for x in doc[k]]
        return own + [b for v in doc.values() for b in _bounds(v)]
    if isinstance(doc, list):
        return [b for v in doc for b in _bounds(v)]
    return []


def _strict(text: str) -> object:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in strict JSON")

    return json.loads(text, parse_constant=refuse)


def test_json_is_strict_and_holds_no_bound_below_zero(run_cli: RunCli) -> None:
    code, out, err = run_cli("report", str(RUNS3), "--json")
    assert code == 0, err
    doc = _strict(out)
    assert isinstance(doc, dict)
    bounds = _bounds(doc)
    assert len(bounds) > 40 and min(bounds) >= 0.0
    runs = doc["extra"]["peer_repeats"]["runs"]
    assert [r["verdict"] for r in runs] == ["same_measurement", "cache_served", "cache_served"]


def test_printed_intervals_none_below_zero_and_aiperfs_beside_ours(run_cli: RunCli) -> None:
    code, out, err = run_cli(
        "report",
        str(RUNS3),
        "--model",
        "smollm2-135m",
        "--flops",
        "100GFLOPS",
        "--bandwidth",
        "10GB/s",
    )
    assert code == 0, err
    pairs = re.findall(r"\[(-?[\d.]+), (-?[\d.]+)\]", out)
    assert len(pairs) >= 30 and min(float(x) for p in pairs for x in p) >= 0.0
    row = next(x for x in out.splitlines() if x.startswith("TTFT p50 ms"))
    assert "883.7 [" in row and "78.0 [" in row and "346.1 [0.0, 1502.7], 135%*" in row
    assert "own low end was below zero (TTFT p50 -810.5 ms, TTFT p90 -863.5 ms" in out
    assert "shown clipped at 0, since no time or rate is negative" in out
    for label in ("run_0002", "run_0003"):
        line = next(x for x in out.splitlines() if x.startswith(label))
        assert "cache-served" in line and line.rstrip().endswith("97%")
    assert "c=4 combines run_0001 (1 of 3 runs; run_0002, run_0003 left out" in out
    # one run kept: its interval's reach is said, and bench's remedy is not offered
    assert "intervals from one run cover request-to-request variation only" in out
    assert "bench --repeat" not in out


def test_a_single_run_folder_reads_as_before() -> None:
    """AIPerf's single-run artifact dir (c4/) and one run of the three, read alone: one
    level, no repeats block, no intervals (as before this reader)."""
    for folder in (HERE / "c4", RUNS3 / "profile_runs" / "run_0002"):
        _, s, _, tool = read_input(folder, None, None)
        assert tool == "aiperf" and s is not None and "peer_repeats" not in s.extra
        (lv,) = s.levels
        assert lv.repeats is None and lv.uncertainty is None
    _, alone, _, _ = read_input(RUNS3 / "profile_runs" / "run_0002", None, None)
    assert alone is not None  # the server's cached-prompt count now reaches bench's check
    assert "prefix_cache_hit" in [w.code for w in alone.warnings]


def _copies(run: PeerRun, n: int) -> PeerRun:
    """Run 1 repeated n times, a minute apart: n runs of one measurement."""
    first = run.repeats[0]
    reps = tuple(
        dataclasses.replace(
            first, label=f"run_{i + 1:04d}", first_send_ns=first.first_send_ns + i * 60 * 10**9
        )
        for i in range(n)
    )
    return dataclasses.replace(run, repeats=reps)


def test_runs_of_one_measurement_pool_with_the_two_stage_bootstrap() -> None:
    run, block = combine(_copies(read_peer(AGGREGATE), 3), None)
    assert block is not None and block.kept == LABELS and block.apart == ()
    (lv,) = run.levels
    one = read_peer(AGGREGATE).repeats[0].level.summary
    s = lv.summary
    assert s.requests_ok == 48 and s.window_s == pytest.approx(3 * one.window_s)
    assert s.output_tokens_per_s_total == pytest.approx(one.output_tokens_per_s_total)
    assert s.ttft_s.p50 == pytest.approx(one.ttft_s.p50)
    assert s.uncertainty is not None and s.uncertainty.repeats == 3 and s.uncertainty.covers_drift
    assert s.uncertainty.of("output_tokens_per_s_total") is not None
    assert [r.repeat for r in s.repeats or ()] == [0, 1, 2]


def test_every_run_flagged_is_pooled_and_says_so() -> None:
    """At 1 GFLOP/s no run's TTFT p50 reaches the 8.6 s floor: all three are pooled, and
    each is named."""
    s = summarise(read_peer(AGGREGATE), _floor(1e9))
    block = _block(s)
    assert block.kept == LABELS and block.apart == ()
    assert {r.verdict for r in block.runs} == {"cache_served"}
    assert all(
        "pooled all the same" in w.message for w in s.warnings if w.code.startswith("repeat_")
    )


def test_pooled_runs_are_said_to_be_back_to_back() -> None:
    s = summarise(read_peer(AGGREGATE), _floor(1e9))
    lines = interval_lines(s)
    assert "3 repeats per level, aiperf's runs, back to back: the intervals cover drift" in (
        " ".join(lines)
    )
    assert not any("interleaved" in x for x in lines)


def test_a_run_without_its_records_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "c4-3runs"
    shutil.copytree(RUNS3, folder)
    (folder / "profile_runs" / "run_0002" / "profile_export.jsonl").unlink()
    with pytest.raises(PeerFormatError, match=r"run_0002/profile_export.jsonl: missing"):
        read_peer(folder / "aggregate" / "profile_export_aiperf_aggregate.json")


def test_much_faster_without_the_servers_word_is_unlike_first() -> None:
    """The same files with the server's cached-prompt counts taken out: runs 2 and 3 are
    still left out (TTFT p50 under half of run 1's), named for what is known."""
    run = read_peer(AGGREGATE)
    reps = tuple(
        dataclasses.replace(
            rep,
            level=dataclasses.replace(
                rep.level,
                records=tuple(
                    dataclasses.replace(r, cached_prompt_tokens=None) for r in rep.level.records
                ),
            ),
        )
        for rep in run.repeats
    )
    _, block = combine(dataclasses.replace(run, repeats=reps), None)
    assert block is not None
    assert [r.verdict for r in block.runs] == ["same_measurement", "unlike_first", "unlike_first"]
    assert block.apart == ("run_0002", "run_0003")
    reason = block.runs[1].reason or ""
    assert "not the same measurement as run_0001" in reason and "reported" not in reason
