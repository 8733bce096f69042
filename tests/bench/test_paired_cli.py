"""bench --url A --url B end to end, against two scripted fake servers: B's time per token is
scripted twice A's, so B is slower on TPOT at every level whatever this machine's speed (a
busy machine's jitter, a few ms a read, is a small share of 20 and 40 ms gaps);
one run folder whose records name endpoint and block, an order-balanced block order, and
--fail-if-slower 5 % exits 1 (A against A: 0). Bad --url sets are refused in one line."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.records import read_records
from inferlab.summary import RunSummary
from tests.clirun import RunCli

from .conftest import fake_server

TPOT_A_S = 0.020
TPOT_B_S = TPOT_A_S * 2.0  # B: twice as slow per token, by script
TTFT_S = 0.05  # long enough that a busy machine's jitter is a small share of it
SMALL = [
    "--concurrency", "1,2", "--requests-per-level", "8", "--prompt-tokens", "8",
    "--output-tokens", "16", "--served-model", "fake", "--no-plots", "--no-report",
]  # fmt: skip


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, str]]:
    with (
        fake_server(ttft=TTFT_S, tpot=TPOT_A_S, slow_every=0) as a,
        fake_server(ttft=TTFT_S, tpot=TPOT_B_S, slow_every=0) as b,
    ):
        yield a, b


@pytest.fixture(scope="module")
def paired_run(
    servers: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[int, str, Path]:
    """One paired run of A (base) and B (new), gated at 5 %: (exit code, stdout, folder)."""
    from inferlab.cli import main

    a, b = servers
    out = tmp_path_factory.mktemp("paired") / "run"
    argv = ["bench", "--url", f"base={a}", "--url", f"new={b}", *SMALL, "--out", str(out)]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):  # a module's fixture has no capsys
        code = main([*argv, "--fail-if-slower", "5%", "--json"])
    return code, stdout.getvalue(), out


@pytest.mark.slow
def test_b_is_slower_on_tpot_at_every_level_and_the_gate_fails(
    paired_run: tuple[int, str, Path],
) -> None:
    code, out, folder = paired_run
    assert code == 1
    strict = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json"))
    summary = RunSummary.from_json(strict)  # --json: the summary alone, strict JSON
    assert summary.paired is not None
    assert [lv.level for lv in summary.paired.levels] == ["c=1", "c=2"]
    for lv in summary.paired.levels:
        (c,) = lv.comparisons
        assert (c.baseline, c.endpoint) == ("base", "new")
        tpot = next(q for q in c.quantities if q.quantity == "tpot_s.p50")
        assert tpot.verdict == "slower"
        assert tpot.ratio is not None and tpot.ratio > 1.5  # scripted: 2
        assert tpot.detectable_change_80pct_power is not None
        tok = next(q for q in c.quantities if q.quantity == "output_tokens_per_s_total")
        assert tok.verdict == "slower" and tok.ratio is not None and tok.ratio < 1.0
    labels = [lv.label for lv in summary.levels]
    assert labels == ["base c=1", "new c=1", "base c=2", "new c=2"]
    for lv in summary.paired.levels:  # the machine canary after every block, fitted or not
        assert lv.machine_ms is not None and len(lv.machine_ms) == len(lv.block_order)
        assert all(ms is not None and ms > 0 for ms in lv.machine_ms)
        for q in lv.comparisons[0].quantities:
            fit = q.machine_covariate
            assert fit is not None and fit.pairs == lv.comparisons[0].block_pairs and fit.why
    assert json.loads((folder / "summary.json").read_text())["paired"]["levels"]


@pytest.mark.slow
def test_records_name_endpoint_and_block_in_an_order_balanced_sequence(
    paired_run: tuple[int, str, Path],
) -> None:
    _, out, folder = paired_run
    paired = json.loads(out)["paired"]
    records = read_records(folder / "records.jsonl")
    assert {r.endpoint for r in records} == {"base", "new"}
    assert all(r.block is not None and r.level.startswith(f"{r.endpoint} c=") for r in records)
    for lv in paired["levels"]:
        level = lv["level"]
        mine = [r for r in records if r.level.endswith(f" {level}")]
        blocks = {}
        for r in mine:
            assert blocks.setdefault(r.block, r.endpoint) == r.endpoint  # one endpoint a block
        order = [blocks[b] for b in sorted(blocks)]
        assert order == lv["block_order"]
        rounds = Counter(tuple(order[i : i + 2]) for i in range(0, len(order), 2))
        assert rounds[("base", "new")] == rounds[("new", "base")] >= 2
        # warm-up: each endpoint's, in its first block of the level only
        for side in ("base", "new"):
            warm = {r.block for r in mine if r.endpoint == side and r.phase == "warmup"}
            assert warm == {order.index(side)}
        # one endpoint loaded at a time: a block starts after the one before it ended
        spans = [
            (
                min(r.send_ns for r in mine if r.block == b),
                max(r.end_ns for r in mine if r.block == b),
            )
            for b in sorted(blocks)
        ]
        assert all(nxt[0] >= prev[1] for prev, nxt in zip(spans, spans[1:], strict=False))


@pytest.mark.slow
def test_report_of_the_run_folder_prints_the_pairs(
    paired_run: tuple[int, str, Path], run_cli: RunCli
) -> None:
    _, _, folder = paired_run
    code, out, err = run_cli("report", str(folder))
    assert code == 0, err
    assert "paired in blocks: base, new" in out and "new / base [95 %]" in out
    assert out.count("block pairs of") == 2  # c=1 and c=2


@pytest.mark.slow
def test_a_against_a_passes_the_gate(
    servers: tuple[str, str], run_cli: RunCli, tmp_path: Path
) -> None:
    a, _ = servers
    code, out, err = run_cli(
        "bench", "--url", a, "--url", a, *SMALL, "--out", str(tmp_path / "aa"),
        "--fail-if-slower", "5%",
    )  # fmt: skip
    assert code == 0, err
    assert "paired in blocks: base, new" in out
    assert "new / base [95 %]" in out and "detectable" in out and "machine" in out
    assert "slower:" not in err


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--url", "x=http://127.0.0.1:9/v1", "--url", "x=http://127.0.0.1:8/v1"], "labelled 'x'"),
        (["--url", "base=", "--url", "http://127.0.0.1:8/v1"], "no URL after 'base='"),
        (["--url", "http://127.0.0.1:9/v1", "--fail-if-slower", "5%"], "gates a paired run"),
        (["--url", "a=http://h:1/v1", "--url", "b=http://h:2/v1", "--rate", "2"], "--rate"),
    ],
)
def test_bad_endpoint_sets_are_one_line(
    run_cli: RunCli, tmp_path: Path, extra: list[str], said: str
) -> None:
    code, _, err = run_cli("bench", *extra, "--out", str(tmp_path / "r"))
    assert code == 2
    assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()  # refused before any run folder is made


def test_the_gate_words_a_throughput_drop_as_minus_and_slower() -> None:
    from inferlab.report.paired_text import failing, gate_line
    from inferlab.summary import PairedComparison, PairedLevel, PairedQuantity, PairedRun

    def q(name: str, ratio: float, ci: tuple[float, float]) -> PairedQuantity:
        return PairedQuantity(
            quantity=name, a=100.0, b=100.0 * ratio, ratio=ratio, ci95=ci,
            verdict="slower", detectable_change_80pct_power=0.02, block_ratios=(ratio,) * 4,
        )  # fmt: skip

    tok = q("output_tokens_per_s_total", 0.8, (0.75, 0.85))
    small = q("tpot_s.p50", 1.03, (1.01, 1.05))  # slower beyond noise, but by under 5 %
    c = PairedComparison(baseline="base", endpoint="new", block_pairs=4, quantities=(tok, small))
    lv = PairedLevel(level="c=2", requests_per_block=4, block_order=(), comparisons=(c,))
    run = PairedRun(method="", block_requests_per_stream=2, endpoints=(), levels=(lv,))
    bad = failing(run, 0.05)
    assert [x[2].quantity for x in bad] == ["output_tokens_per_s_total"]
    line = gate_line(*bad[0], 0.05)
    assert line.startswith("slower: c=2 new against base tok/s total -20.0 %") and "+" not in line
