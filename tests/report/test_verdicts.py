"""`report A B` verdicts (metrics/verdicts.py): a run of the fake server against the same run
with every step 10 % and 3 % slower (its times scaled, so no verdict rests on the machine's
speed), an A/A pair of seeded draws from one server, and --fail-if-slower's exit codes."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.bench.benchmark import BenchConfig, event_loop_runner, run_benchmark
from inferlab.commands.flags.argtypes import share_arg
from inferlab.jsonio import write_json
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.metrics.runfolder import load_summary
from inferlab.metrics.verdicts import compare_level, judge
from inferlab.records import RequestRecord, read_records
from inferlab.testing.fake_server import running_fake_server

TTFT_S, TPOT_S = 0.02, 0.01
LEVELS = ("c=1", "c=2", "c=4")


def _bench(out: Path) -> Path:
    """Three repeats of c=1, 2, 4 against the fake server."""
    with running_fake_server(ttft=TTFT_S, tpot=TPOT_S, slow_every=0) as url:
        load = Workload.fixed(
            prompt_tokens=16,
            output_tokens=16,
            levels=[Level("concurrency", c) for c in (1, 2, 4)],
            requests_per_level=8,
        )
        cfg = BenchConfig(url=url, model="fake", load=load, out_dir=out, repeats=3)
        event_loop_runner()(run_benchmark(cfg))
    return out


def _slowed(run: Path, out: Path, slower: float) -> Path:
    """The same run with every step `slower` x: each request's times after its send scaled
    (the schedule this test controls: a verdict that never rests on the machine's speed).
    Its summary is rebuilt from the records (metrics/runfolder.py), as for a killed run."""
    out.mkdir()
    lines = []
    for line in (run / "records.jsonl").read_text().splitlines():
        d = json.loads(line)
        send = d["send_ns"]
        d["event_ns"] = [send + round((t - send) * slower) for t in d["event_ns"]]
        for key in ("end_ns", "first_answer_ns"):
            if d.get(key):
                d[key] = send + round((d[key] - send) * slower)
        lines.append(json.dumps(d))
    (out / "records.jsonl").write_text("\n".join(lines) + "\n")
    write_json(out / "summary.json", load_summary(out))  # rebuilt from the scaled records
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    base = tmp_path_factory.mktemp("verdicts")
    a = _bench(base / "a")
    made = {"a": a}
    for name, slower in (("b10", 1.10), ("b3", 1.03), ("a2", 1.0)):
        made[name] = _slowed(a, base / name, slower)
    yield made


def _verdicts(a: Path, b: Path) -> dict[tuple[str, str], str]:
    ra, rb = read_records(a / "records.jsonl"), read_records(b / "records.jsonl")
    out = {}
    for level in LEVELS:
        la = [r for r in ra if r.level == level]
        lb = [r for r in rb if r.level == level]
        out |= {(q.level, q.quantity): q.verdict for q in compare_level(level, la, lb)}
    return out


@pytest.mark.slow
def test_ten_percent_slower_steps_are_slower_at_every_level(runs: dict[str, Path]) -> None:
    v = _verdicts(runs["a"], runs["b10"])
    assert [v[(lv, "tpot_s.p50")] for lv in LEVELS] == ["slower"] * 3
    assert "faster" not in v.values()


@pytest.mark.slow
def test_three_percent_slower_is_never_faster(runs: dict[str, Path]) -> None:
    v = _verdicts(runs["a"], runs["b3"])
    assert {v[(lv, "tpot_s.p50")] for lv in LEVELS} <= {"slower", "within_noise"}


def _draws(seed: int, tpot_ns: float, level: str, repeats: int = 3) -> list[RequestRecord]:
    """A level's records as a server of `tpot_ns` per token serves them: per-request noise
    (lognormal, 3 %) and a drift of the machine between repeats (normal, 1 %), seeded. At 2 %
    drift, 3 repeats call 10 % slower in 18 of 20 seeds and A/A within noise in 19 of 20."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for rep in range(repeats):
        drift = 1 + rng.normal(0, 0.01)
        for i in range(8):
            step = tpot_ns * drift * rng.lognormal(0, 0.03)
            r = _rec(100 * rep + i, int(step), repeat=rep)
            r.level = level
            out.append(r)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_the_same_server_twice_is_within_noise_at_p50(seed: int) -> None:
    """A/A: two runs drawn from one server (different draws, same distribution)."""
    for level in LEVELS:
        a, b = _draws(2 * seed, 10e6, level), _draws(2 * seed + 1, 10e6, level)
        got = {q.quantity: q.verdict for q in compare_level(level, a, b)}
        assert {v for k, v in got.items() if k.endswith(".p50")} == {"within_noise"}, got


@pytest.mark.parametrize("seed", range(5))
def test_ten_percent_slower_draws_are_slower(seed: int) -> None:
    a, b = _draws(2 * seed, 10e6, "c=1"), _draws(2 * seed + 1, 11e6, "c=1")
    got = {q.quantity: q.verdict for q in compare_level("c=1", a, b)}
    assert got["tpot_s.p50"] == "slower"


@pytest.mark.slow
def test_fail_if_slower_exit_codes(run_cli, runs: dict[str, Path], tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a, b10, a2 = (str(runs[k]) for k in ("a", "b10", "a2"))
    out = ["--out", str(tmp_path)]
    code, text, err = run_cli("report", a, b10, *out, "--fail-if-slower", "5%")
    assert code == 1 and "slower: c=1 tpot_s.p50" in err
    assert "within_noise" in text or "slower" in text
    assert "B against A, beyond noise?" in (tmp_path / "compare.html").read_text()
    code, _, err = run_cli("report", a, b10, *out, "--fail-if-slower", "50%")
    assert code == 0, err  # 10 % slower is not 50 % slower
    code, _, err = run_cli("report", a, a2, *out, "--fail-if-slower", "5%")
    assert code == 0, err  # the same records: nothing is slower
    code, text, _ = run_cli("report", a, b10, "--json")
    doc = json.loads(text)
    q = next(
        x
        for x in doc["comparison"]["quantities"]
        if x["level"] == "c=2" and x["quantity"] == "tpot_s.p50"
    )
    assert q["verdict"] == "slower" and q["diff"] > 0 and q["ci95"][0] > 0
    assert q["a"] == pytest.approx(doc["a"]["levels"][1]["tpot_s"]["p50"])


def test_fail_if_slower_needs_two_runs(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = tmp_path / "run"
    run.mkdir()
    src = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"
    (run / "summary.json").write_text(src.read_text())
    code, _, err = run_cli("report", str(run), "--json", "--fail-if-slower", "5%")
    assert code == 2 and "compares two runs" in err
    code, _, err = run_cli("report", str(run), str(run), "--json", "--fail-if-slower", "5%")
    assert code == 2 and "no records.jsonl" in err  # old summaries alone: no verdict


def test_judge_and_the_share_flag() -> None:
    assert judge(1.0, 0.5, 1.5, 0.0, lower_is_better=True) == "slower"
    assert judge(-1.0, -1.5, -0.5, 0.0, lower_is_better=True) == "faster"
    assert judge(-1.0, -1.5, -0.5, 0.0, lower_is_better=False) == "slower"  # tok/s fell
    assert judge(1.0, -0.1, 1.5, 0.0, lower_is_better=True) == "within_noise"  # holds 0
    assert judge(1.0, 0.5, 1.5, 1.2, lower_is_better=True) == "within_noise"  # < spread
    assert share_arg("5%") == pytest.approx(0.05) and share_arg("0.05") == 0.05
    for bad in ("5", "-1%", "fast"):
        with pytest.raises(argparse.ArgumentTypeError):
            share_arg(bad)


def _rec(i: int, tpot_ns: int, repeat: int = 0) -> RequestRecord:
    """A measured ok request of 11 tokens: first after 20 ms, then one each tpot_ns."""
    send = i * 1_000_000_000
    events = [send + 20_000_000 + k * tpot_ns for k in range(11)]
    r = RequestRecord(i, "c=1", "measure", 16, 11, event_ns=events, repeat=repeat)
    r.send_ns, r.http_status, r.event_tokens, r.completion_tokens = send, 200, [1] * 11, 11
    return r


def test_old_records_without_repeats_compare() -> None:
    """Records made before --repeat (no repeat field: one repeat) still get verdicts."""
    a = [_rec(i, 10_000_000 + 10_000 * (i % 5)) for i in range(20)]
    b = [_rec(i, 12_000_000 + 10_000 * (i % 5)) for i in range(20)]
    got = {q.quantity: q for q in compare_level("c=1", a, b)}
    assert got["tpot_s.p50"].verdict == "slower"
    assert got["tpot_s.p50"].diff == pytest.approx(0.002)
    assert got["output_tokens_per_s_total"].verdict in ("slower", "within_noise")
    same = {q.quantity: q.verdict for q in compare_level("c=1", a, a)}
    assert set(same.values()) == {"within_noise"}


def test_a_thin_p99_is_shown_but_not_gated() -> None:
    from inferlab.metrics.verdicts import QuantityDiff
    from inferlab.report.verdict_text import Comparison, failing, thin_line

    def q(quantity: str, samples: int) -> QuantityDiff:
        return QuantityDiff(
            "c=1", quantity, 0.010, 0.012, 0.002, (0.001, 0.003), 0.0, "slower", samples
        )

    c = Comparison((q("tpot_s.p99", 32), q("tpot_s.p50", 32), q("ttft_s.p99", 400)), ())
    assert [x.quantity for x in failing(c, 0.05)] == ["tpot_s.p50", "ttft_s.p99"]
    assert failing(c, 0.25) == []  # 20 % slower is not 25 %
    assert (thin_line(c) or "").startswith("tpot_s.p99: too few requests")
