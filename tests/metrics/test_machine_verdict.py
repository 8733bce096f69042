"""Which was slower, the machine or the server (metrics/machine_verdict.py): the drift
canary's TPOT and the machine canary's matmul_ms + read_ms, a reference set of readings
against a measured one; readings given by hand, never this machine's."""

from __future__ import annotations

import dataclasses
import json

import pytest

from inferlab.metrics.machine_verdict import (
    noise_of,
    verdict_of,
    verdict_words,
    which_slowed,
)
from inferlab.summary import Canary, CanaryReading, MachineCanary, MachineReading

REST_SERVER = [40.0, 40.8, 40.4]  # spread 2 %: the noise is the 5 % floor
REST_MACHINE = [5.0, 5.1, 5.05]


@pytest.mark.parametrize(
    ("server", "machine", "says"),
    [
        ([60.0, 61.0], [7.5, 7.6], "machine"),  # a busy loop on the core: both +50 %
        ([60.0, 61.0], [5.0, 5.1], "server"),  # the server alone +50 %
        ([90.0, 91.0], [7.5, 7.6], "both"),  # +50 % machine, the server +50 % beyond it
        ([41.0, 40.0], [5.1, 5.0], "neither"),
        ([40.5, 40.0], [3.8, 3.9], "server"),  # the machine sped up 24 %, the server did not
        ([41.5, 42.0], [5.3, 5.4], "machine"),  # machine +6 %: the server's +4 % is its
    ],
)  # fmt: skip
def test_the_rule(server: list[float], machine: list[float], says: str) -> None:
    v = which_slowed(REST_SERVER, server, REST_MACHINE, machine)
    assert v is not None and v.says == says, v


def test_the_figures_it_read() -> None:
    v = which_slowed(REST_SERVER, [60.0, 61.0], REST_MACHINE, [7.5, 7.6])
    assert v is not None
    assert v.machine_ratio == pytest.approx(7.55 / 5.05)
    assert v.server_ratio == pytest.approx(60.5 / 40.4)
    assert v.server_own_ratio == pytest.approx(v.server_ratio / v.machine_ratio)
    assert (v.machine_noise, v.server_noise, v.server_own_noise) == pytest.approx(
        (0.05,) * 2 + (0.1,)
    )
    assert verdict_words(v) == (
        "the machine was slower (machine canary +50 %, noise 5 %; server canary +50 %, "
        "noise 5 %; +0 % beyond the machine's move, noise 10 %)"
    )
    held = which_slowed(REST_SERVER, [60.0], REST_MACHINE, [5.0])
    assert held is not None and held.server_own_ratio == held.server_ratio
    assert verdict_words(held).startswith(
        "the server was slower, the machine not (machine canary -1 %"
    )


def test_the_noise_is_the_references_spread_or_five_percent() -> None:
    assert noise_of([5.0, 5.1, 5.05]) == 0.05
    assert noise_of([4.0, 6.0, 5.0]) == pytest.approx(0.4)
    assert noise_of([5.0]) == 0.05
    # a machine canary noisy at rest (40 %) does not call a +30 % move
    v = which_slowed(REST_SERVER, [41.0], [4.0, 6.0, 5.0], [6.5])
    assert v is not None and v.says == "neither"


def test_nothing_to_say_without_readings() -> None:
    assert which_slowed([], [40.0], REST_MACHINE, [5.0]) is None
    assert which_slowed(REST_SERVER, [40.0], REST_MACHINE, []) is None
    assert which_slowed(REST_SERVER, [40.0], [0.0], [5.0]) is None


def _canary(server_ms: list[float], machine_ms: list[float], at_rest: int = 3) -> Canary:
    readings = tuple(CanaryReading(at_s=float(i), tpot_ms=s, at_rest=i < at_rest, before="c=1")
                     for i, s in enumerate(server_ms))  # fmt: skip
    machine = MachineCanary(
        workload="w",
        readings=tuple(MachineReading(m / 2, m / 2, (0,), "x") for m in machine_ms),
        rest_machine_ms=None,
        rest_spread=None,
        verdict=None,
        server_variance_explained=None,
    )
    return Canary(prompt="p", output_tokens=16, slot=0, rest_tpot_ms=None, rest_spread=None,
                  drift_threshold=0.05, readings=readings, machine=machine)  # fmt: skip


def test_one_run_against_another() -> None:
    a = _canary(REST_SERVER, REST_MACHINE)
    v = verdict_of(a, _canary([60.0, 61.0, 60.5], [7.5, 7.6, 7.55]))
    assert v is not None and v.says == "machine"
    v = verdict_of(a, _canary([60.0, 61.0, 60.5], [5.0, 5.1, 5.05]))
    assert v is not None and v.says == "server"
    # both at rest: the noise is the wider of the two runs' spreads (here b's, 40 %)
    v = verdict_of(a, _canary([60.0, 61.0, 60.5], [4.0, 6.0, 5.0]))
    assert v is not None and v.machine_noise == pytest.approx(0.4) and v.says == "server"
    old = Canary.from_json({**a.to_json(), "machine": None})  # a run written before it
    assert old.machine is None and verdict_of(old, a) is None and verdict_of(a, old) is None


def test_one_run_its_rest_against_its_later_readings() -> None:
    run = _canary([*REST_SERVER, 40.5, 40.2, 60.0], [*REST_MACHINE, 5.0, 5.05, 7.6])
    v = verdict_of(run)
    assert v is not None and v.says == "neither"  # the median of the later readings
    v = verdict_of(_canary([*REST_SERVER, 60.0, 61.0], [*REST_MACHINE, 7.4, 7.6]))
    assert v is not None and v.says == "machine"
    assert verdict_of(_canary(REST_SERVER, REST_MACHINE)) is None  # nothing after the rest


def test_the_report_says_which_moved_over_the_run() -> None:
    from inferlab.report.canary_text import canary_lines
    from inferlab.summary import RunSummary
    from tests.sim.test_predict import SWEEP

    run = RunSummary.from_json(json.loads(SWEEP.read_text()))
    slowed = _canary([*REST_SERVER, 60.0, 61.0], [*REST_MACHINE, 7.4, 7.6])
    v = verdict_of(slowed)
    assert v is not None
    lines = canary_lines(dataclasses.replace(run, canary=slowed))
    assert f"over the run, at rest against after the levels: {verdict_words(v)}" in lines
    plain = dataclasses.replace(slowed, machine=None)  # a run without the machine canary
    assert not any(
        "over the run" in x for x in canary_lines(dataclasses.replace(run, canary=plain))
    )
