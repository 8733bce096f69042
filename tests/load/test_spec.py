"""Request specs: the same flags give the same requests, whatever else the run holds."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from inferlab.commands.flags.names import said
from inferlab.errors import InferlabError
from inferlab.load.arrivals import arrival_times
from inferlab.load.lengths import LengthDist
from inferlab.load.spec import Level
from inferlab.load.workload import Prefix, Workload


def _workload(**kw: Any) -> Workload:
    base = Workload(
        LengthDist.parse("uniform:10:200", "--prompt-tokens", 10**6),
        LengthDist.parse("lognormal:50:0.5", "--output-tokens", 10**6),
        (Level("concurrency", 1), Level("concurrency", 4)),
        requests_per_level=50,
        seed=7,
    )
    return dataclasses.replace(base, **kw)


def _same(a: object, b: object) -> None:
    for f in ("arrival_s", "prompt_tokens", "output_tokens", "prefix_group"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_a_level_draws_the_same_requests_wherever_it_sits_in_a_sweep() -> None:
    c4 = Level("concurrency", 4)
    _same(_workload().requests(c4), _workload(levels=(c4,)).requests(c4))
    other = _workload(seed=8).requests(c4)
    assert not np.array_equal(other.prompt_tokens, _workload().requests(c4).prompt_tokens)


def test_warmup_is_extra_and_leaves_the_measured_requests_alone() -> None:
    c4 = Level("concurrency", 4)
    w0, w9 = _workload(warmup=0), _workload(warmup=9)
    assert len(w0.warmup_requests(c4)) == 0 and len(w9.warmup_requests(c4)) == 9
    assert len(_workload().warmup_requests(c4)) == 4  # default: one per stream
    _same(w0.requests(c4), w9.requests(c4))


def test_prefix_groups_keep_the_lengths_and_imply_their_hits() -> None:
    c1 = Level("concurrency", 1)
    plain = _workload().requests(c1)
    grouped = _workload(prefix=Prefix(3, 5)).requests(c1)
    np.testing.assert_array_equal(plain.prompt_tokens, grouped.prompt_tokens)  # all > 5 here
    assert set(grouped.prefix_group.tolist()) == {0, 1, 2}
    assert grouped.spec(0).shared_tokens == 5 and grouped.spec(0).prefix_group is not None
    fixed = _workload(
        prompt=LengthDist.parse("20", "--prompt-tokens", 100),
        prefix=Prefix(1, 10),
        requests_per_level=5,
    ).requests(c1)
    # One group: every request after the first finds its 10 tokens cached: 4 x 10 of 100.
    assert fixed.implied_hit_ratio == pytest.approx(0.4)
    assert plain.implied_hit_ratio is None


def test_open_loop_levels_draw_instants_closed_loop_ones_slots() -> None:
    r = _workload(levels=(Level("rate", 5.0),)).requests(Level("rate", 5.0))
    assert len(r) == 50 and np.all(np.diff(r.arrival_s) > 0) and r.arrival_s[0] > 0
    assert r.spec(3).arrival_s == pytest.approx(float(r.arrival_s[3]))
    c = _workload().requests(Level("concurrency", 4))
    assert c.closed_loop and c.spec(0).arrival_s is None


def test_duration_ends_an_open_loop_level() -> None:
    w = _workload(requests_per_level=None, duration_s=10.0)
    r = w.requests(Level("rate", 20.0))
    assert 150 < len(r) < 250 and r.arrival_s[-1] < 10.0
    with pytest.raises(InferlabError, match="requests_per_level"):  # the field; CLI: the flag
        w.requests(Level("concurrency", 2))


def test_arrival_processes() -> None:
    const = arrival_times(np.random.default_rng(0), "constant", 4.0, count=4)
    np.testing.assert_allclose(const, [0.25, 0.5, 0.75, 1.0])
    for k in (0.25, 4.0):
        t = arrival_times(np.random.default_rng(1), "gamma", 50.0, k, count=40_000)
        gaps = np.diff(t)
        assert gaps.mean() == pytest.approx(1 / 50, rel=0.03)
        assert gaps.std() / gaps.mean() == pytest.approx(1 / k**0.5, rel=0.05)  # CV = 1/sqrt(K)
    t = arrival_times(np.random.default_rng(2), "poisson", 100.0, duration_s=50.0)
    assert t[-1] < 50.0 and len(t) == pytest.approx(5000, rel=0.05)


@pytest.mark.parametrize(
    ("rate", "k", "needle"), [(0.0, 1.0, "--rate"), (5.0, 0.0, "--burstiness")]
)
def test_bad_arrivals_name_the_flag(rate: float, k: float, needle: str) -> None:
    with pytest.raises(InferlabError) as e:
        arrival_times(np.random.default_rng(0), "gamma", rate, k, count=3)
    assert needle in said(e.value) and needle not in str(e.value)  # the library names a field


def test_a_million_specs_are_columns() -> None:
    r = _workload(requests_per_level=1_000_000).requests(Level("rate", 100.0))
    assert len(r) == 1_000_000 and r.prompt_tokens.dtype == np.int64
    assert r.prompt_tokens.min() >= 10 and r.prompt_tokens.max() <= 200
