"""The load flags: the same on bench, simulate and plan, read into the same request specs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from inferlab.cli import _parse
from inferlab.commands.flags.load import LoadDefaults, load_from_args
from inferlab.commands.flags.names import said
from inferlab.errors import InferlabError
from inferlab.load.spec import Requests
from inferlab.load.workload import Workload

SIM = ("simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm")
BENCH = ("bench", "--url", "http://127.0.0.1:9/v1")


def _workload(*argv: str) -> Workload:
    args = _parse(list(argv))
    assert not isinstance(args, int), argv
    defaults = (
        LoadDefaults(requests_per_level=None, duration_s=60.0)
        if argv[0] == "simulate"
        else LoadDefaults()
    )
    return load_from_args(args, defaults)


def _same(a: Requests, b: Requests) -> None:
    for f in (
        "arrival_s",
        "prompt_tokens",
        "output_tokens",
        "prefix_group",
        "conversation_id",
        "turn",
    ):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


LOADS = [
    ("--concurrency", "4", "--prompt-tokens", "uniform:10:300", "--output-tokens", "normal:64:16"),
    (
        "--rate",
        "5",
        "--arrival",
        "gamma",
        "--burstiness",
        "0.3",
        "--prompt-tokens",
        "lognormal:200:0.7",
    ),
    ("--rate", "5/s", "--gamma-shape", "2", "--duration", "30s"),
    ("--rate", "3", "--arrival", "constant", "--prefix-groups", "4", "--prefix-tokens", "64"),
    ("--concurrency", "2", "--turns", "3", "--think-time", "2s", "--output-tokens", "20"),
]


@pytest.mark.parametrize("load", LOADS)
def test_bench_and_simulate_read_the_same_requests(load: tuple[str, ...]) -> None:
    # the same flags: bench's quick default output (128) is not simulate's (256), so say it
    given = load if "--output-tokens" in load else (*load, "--output-tokens", "256")
    common = (*given, "--requests-per-level", "40", "--seed", "11")
    if "--duration" in load:
        common = (*given, "--seed", "11")
    bench, sim = _workload(*BENCH, *common), _workload(*SIM, *common)
    assert bench.levels == sim.levels and len(bench.levels) == 1
    _same(bench.requests(bench.levels[0]), sim.requests(sim.levels[0]))


def test_a_sweep_level_draws_what_a_single_simulated_level_draws() -> None:
    load = ("--prompt-tokens", "uniform:1:99", "--output-tokens", "256")
    bench = _workload(*BENCH, "--concurrency", "1,4,16", *load, "--requests-per-level", "64")
    sim = _workload(*SIM, "--concurrency", "4", *load, "--requests-per-level", "64")
    _same(bench.requests(bench.levels[1]), sim.requests(sim.levels[0]))


def test_gamma_shape_is_burstiness_and_burstiness_alone_means_gamma() -> None:
    w = _workload(*SIM, "--rate", "5", "--gamma-shape", "0.25")
    assert (w.arrival, w.burstiness) == ("gamma", 0.25)
    assert _workload(*SIM, "--rate", "5", "--arrival", "gamma").burstiness == 0.5
    assert _workload(*SIM, "--rate", "5").arrival == "poisson"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("--concurrency", "2", "--prompt-tokens", "wide:1:2"), "--prompt-tokens 'wide:1:2'"),
        (("--concurrency", "2", "--prefix-groups", "3"), "--prefix-groups G and --prefix-tokens P"),
        (("--rate", "5", "--burstiness", "0"), "--burstiness (--gamma-shape) must be positive"),
        (("--rate", "4", "--concurrency", "2"), "not both"),
        (("--concurrency", "2", "--duration", "10s"), "a --concurrency level ends after"),
        (("--concurrency", "2", "--turns", "0"), "--turns must be 1 to"),
        (
            ("--concurrency", "2", "--turns", "2", "--prefix-groups", "2", "--prefix-tokens", "9"),
            "--turns",
        ),
    ],
)
def test_bad_load_flags_name_the_flag(argv: tuple[str, ...], needle: str) -> None:
    with pytest.raises(InferlabError) as e:
        _workload(*BENCH, *argv)
    assert needle in said(e.value)


def test_a_trace_is_one_level_that_replaces_the_sweep(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp_s,prompt_tokens,output_tokens\n0,100,10\n0.5,200,20\n2,50,5\n")
    w = _workload(
        *BENCH, "--trace", str(trace), "--length-scale", "0.5", "--requests-per-level", "1"
    )
    (level,) = w.levels
    assert level.kind == "trace" and level.value == pytest.approx(1.0)  # 2 gaps over 2 s
    r = w.requests(level)
    assert r.prompt_tokens.tolist() == [50, 100, 25]  # every row, scaled; not capped at 1
    np.testing.assert_allclose(r.arrival_s, [0.0, 0.5, 2.0])
    with pytest.raises(InferlabError, match="--trace is one level"):
        _workload(*BENCH, "--trace", str(trace), "--rate", "4")
    sim = _workload(*SIM, "--trace", str(trace), "--length-scale", "0.5")
    _same(r, sim.requests(sim.levels[0]))


def test_plan_takes_lengths_and_arrivals_but_no_levels() -> None:
    args = _parse(
        [
            "plan",
            "--model",
            "llama-3-8b",
            "--hardware",
            "h100-sxm",
            "--rate",
            "5/s",
            "--slo",
            "ttft_p99=1s",
            "--prompt-tokens",
            "uniform:100:200",
            "--burstiness",
            "0.5",
        ]
    )
    assert not isinstance(args, int)
    w = load_from_args(args, LoadDefaults(levels=False))
    assert w.levels == () and w.arrival == "gamma" and w.prompt.mean_tokens == pytest.approx(150)
