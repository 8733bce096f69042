"""The simulator reproduces the cards (Q2-b, Q3-b), a queueing closed form, and a real sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.load.lengths import LengthDist
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.metrics.requests import latency
from inferlab.sim.engine import SimResult, simulate
from inferlab.sim.output import to_records
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime.calibrated import FittedStepTime, closed_loop, fit_from_summary
from inferlab.sim.steptime.roofline import RooflineStepTime
from inferlab.sim.users import ClosedLoop
from inferlab.sim.workload import Arrival, arrivals_of
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import get_hardware
from inferlab.summary import RunSummary

SWEEP = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"


def open_arrivals(
    rate: float, duration_s: float, prompt: str, output: str, seed: int, burstiness: float = 1.0
) -> list[Arrival]:
    """An open loop as load/ draws it (Workload.requests), as simulated arrivals."""
    w = Workload(
        LengthDist.parse(prompt, "--prompt-tokens"),
        LengthDist.parse(output, "--output-tokens"),
        (),
        duration_s=duration_s,
        arrival="gamma" if burstiness != 1.0 else "poisson",
        burstiness=burstiness,
        seed=seed,
    )
    return arrivals_of(w.requests(Level("rate", rate)))


@pytest.fixture
def card_model() -> RooflineStepTime:
    """Llama 3 8B as card Q2 states it: 16 GB BF16 weights, 8B params, on one H100."""
    return RooflineStepTime(ModelCost.stated(16e9, 0.0, 8e9), get_hardware("h100-sxm"))


def gaps(res: SimResult, label: str = "x") -> list[float]:
    return [g for r in to_records(res, label) if (x := latency(r)) for g in x.gaps_s]


def test_Q2_b_paste_stalls_30_streams_27_steps(card_model: RooflineStepTime) -> None:
    paste = [Arrival(2.0, 8000, 500, injected=True)]
    res = simulate(
        paste,
        card_model,
        Policy("continuous"),
        ClosedLoop(30, 1, prompt_tokens=32, output_tokens=500),
    )
    g = sorted(gaps(res))
    step = g[len(g) // 2]
    assert step == pytest.approx(4.78e-3, rel=0.02)  # 16 GB / 3.35 TB/s
    stall_steps = (g[-1] - step) / step
    assert stall_steps == pytest.approx(27, rel=0.05)  # 129 ms / 4.8 ms


def test_Q2_b_chunked_prefill_bounds_the_gap(card_model: RooflineStepTime) -> None:
    paste = [Arrival(2.0, 8000, 500, injected=True)]
    res = simulate(
        paste,
        card_model,
        Policy("continuous", chunk_tokens=512),
        ClosedLoop(30, 1, prompt_tokens=32, output_tokens=500),
    )
    step = 4.78e-3
    chunk = 512 * 2 * 8e9 / 989e12  # one 512-token chunk's compute time
    assert max(gaps(res)) <= step + chunk


def test_Q3_b_sequential_vs_continuous(card_model: RooflineStepTime) -> None:
    e2e = {}
    for policy in ("sequential", "continuous"):
        res = simulate(
            [],
            card_model,
            Policy(policy),
            ClosedLoop(20, 1, prompt_tokens=100, output_tokens=300),
        )
        e2e[policy] = sorted(x.e2e_s for r in to_records(res, "x") if (x := latency(r)))
    single = e2e["sequential"][0]  # the first user is served alone
    assert e2e["sequential"][-1] / single == pytest.approx(20, rel=0.03)
    assert e2e["continuous"][-1] / single < 1.5  # everyone shares each weight read


def test_md1_mean_wait_matches_closed_form() -> None:
    # Sequential service, fixed lengths: every request takes D; Poisson arrivals: M/D/1.
    model = FittedStepTime(0.01, 0.0, 0.0)  # 10 ms per step
    prompt, out = 10, 10  # one prefill step + 9 decode steps: D = 0.1 s
    service = 0.1
    rate = 5.0  # rho = 0.5
    arr = open_arrivals(rate, 4000, str(prompt), str(out), seed=1)
    res = simulate(arr, model, Policy("sequential"))
    waits = [x.e2e_s - service for r in to_records(res, "x") if (x := latency(r))]
    rho = rate * service
    expected = rho * service / (2 * (1 - rho))  # Pollaczek-Khinchine for deterministic service
    assert sum(waits) / len(waits) == pytest.approx(expected, rel=0.06)


def test_static_batch_runs_to_its_longest_member(card_model: RooflineStepTime) -> None:
    # id0 runs alone; id1 (200 tokens) and id2 (50) then form one batch; id3 arrives
    # mid-batch. Static: id3 waits for the batch's longest member. Continuous: it joins.
    arr = [
        Arrival(0.0, 10, 50),
        Arrival(0.001, 10, 200),
        Arrival(0.002, 10, 50),
        Arrival(0.5, 10, 50),
    ]
    first_token = {}
    for policy in ("static", "continuous"):
        res = simulate(arr, card_model, Policy(policy, max_batch=4))
        by_id = {r.id: r for r in res.requests}
        first_token[policy] = res.token_times(by_id[3])[0]
        if policy == "static":
            assert by_id[1].finish_s is not None
            assert first_token[policy] > by_id[1].finish_s
    assert first_token["continuous"] < 0.6


def test_kv_capacity_preempts_and_counts() -> None:
    model = FittedStepTime(0.001, 0.0001, 0.00001)
    res = simulate(
        [],
        model,
        Policy("continuous", kv_capacity_tokens=1024, block_tokens=16),
        ClosedLoop(8, 2, prompt_tokens=50, output_tokens=200),
    )
    assert res.preemptions > 0
    assert all(r.finish_s is not None for r in res.requests)  # recomputed and finished
    assert all(len(res.token_times(r)) == 200 for r in res.requests)


def test_kv_too_small_for_one_request_is_an_error() -> None:
    from inferlab.errors import InferlabError

    with pytest.raises(InferlabError, match="cannot hold even one request"):
        simulate(
            [Arrival(0, 4000, 10)],
            FittedStepTime(0.001, 0, 0),
            Policy("continuous", kv_capacity_tokens=1000),
        )


def test_deterministic_with_a_seed(card_model: RooflineStepTime) -> None:
    def run() -> list[float]:
        arr = open_arrivals(20, 5, "uniform:10:100", "uniform:10:50", seed=7)
        res = simulate(arr, card_model, Policy("continuous", chunk_tokens=256))
        return [r.finish_s or 0.0 for r in res.requests]

    assert run() == run()


def test_calibrated_on_two_levels_predicts_the_others_within_15_percent() -> None:
    summary = json.loads(SWEEP.read_text())
    model = fit_from_summary(RunSummary.from_json(summary), ["c=1", "c=16"])
    w = summary["workload"]
    for lv in summary["levels"]:
        if lv["label"] in ("c=1", "c=16"):
            continue
        tpot, _ = closed_loop(model, lv["concurrency"], w["prompt_tokens"], w["output_tokens"])
        assert tpot == pytest.approx(lv["tpot_s"]["p50"], rel=0.15), lv["label"]


def test_gamma_arrivals_keep_the_rate_and_are_burstier() -> None:
    """Gamma arrivals keep the mean rate; shape < 1 is burstier than Poisson."""
    g = open_arrivals(50, 200, "1", "1", seed=3, burstiness=0.25)
    p = open_arrivals(50, 200, "1", "1", seed=3)
    assert len(g) == pytest.approx(len(p), rel=0.1)

    def cv(a: list[Arrival]) -> float:
        d = [y.arrival_s - x.arrival_s for x, y in zip(a, a[1:], strict=False)]
        m = sum(d) / len(d)
        return float((sum((x - m) ** 2 for x in d) / len(d)) ** 0.5 / m)

    assert cv(g) > 1.5 * cv(p)
