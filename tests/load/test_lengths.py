"""Length distributions: every accepted form, the legacy forms, the clip, the mean, bad text."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferlab.errors import InferlabError
from inferlab.load.lengths import LengthDist


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_fixed_gives_n_every_time() -> None:
    d = LengthDist.parse("128", "--prompt-tokens")
    x = d.sample(_rng(), 1000)
    assert x.dtype == np.int64 and set(x.tolist()) == {128}
    assert d.mean_tokens == 128 and d.max_possible == 128 and d.describe() == "fixed 128"


def test_fixed_constructor_checks_like_the_flag() -> None:
    assert LengthDist.fixed(64) == LengthDist.parse("64", "--output-tokens")
    with pytest.raises(InferlabError, match="N must be between 1 and 10"):
        LengthDist.fixed(11, max_tokens=10)


def test_uniform_covers_both_ends_and_nothing_else() -> None:
    d = LengthDist.parse("uniform:3:7", "--prompt-tokens")
    x = d.sample(_rng(), 10_000)
    assert set(x.tolist()) == {3, 4, 5, 6, 7}
    assert d.mean_tokens == 5.0 and d.describe() == "uniform 3 to 7"


def test_legacy_low_high_is_uniform() -> None:
    assert LengthDist.parse("10:20", "--prompt-tokens") == LengthDist.parse(
        "uniform:10:20", "--prompt-tokens"
    )


def test_uniform_above_the_limit_is_clipped_and_its_mean_counts_the_clip() -> None:
    d = LengthDist.parse("uniform:1:10", "--output-tokens", max_tokens=5)
    x = d.sample(_rng(), 100_000)
    assert x.max() == 5 and (x == 5).mean() == pytest.approx(0.6, abs=0.01)
    assert d.mean_tokens == pytest.approx((1 + 2 + 3 + 4 + 5 * 6) / 10)
    assert d.max_possible == 5
    assert d.describe() == "uniform 1 to 10, clipped to [1, 5]"


def test_normal_mean_and_spread() -> None:
    d = LengthDist.parse("normal:500:100", "--prompt-tokens")
    x = d.sample(_rng(1), 1_000_000)
    assert x.mean() == pytest.approx(500, abs=0.5)
    assert x.std() == pytest.approx(100, abs=0.5)
    assert d.mean_tokens == pytest.approx(500, abs=1e-4)  # the clip at 1 is 5 sd away
    assert d.describe() == "normal mean 500 sd 100, clipped to [1, 1000000]"


def test_normal_clipped_at_one_keeps_an_exact_mean() -> None:
    # Half the mass lies below 1: the clipped mean is well above the unclipped 5.
    d = LengthDist.parse("normal:5:20", "--output-tokens", max_tokens=30)
    x = d.sample(_rng(2), 1_000_000)
    assert x.min() == 1 and x.max() == 30
    assert d.mean_tokens == pytest.approx(x.mean(), abs=0.05)
    assert d.mean_tokens > 8


def test_lognormal_median_and_clipped_mean() -> None:
    d = LengthDist.parse("lognormal:200:0.8", "--prompt-tokens", max_tokens=4096)
    x = d.sample(_rng(3), 1_000_000)
    assert np.median(x) == pytest.approx(200, abs=1)
    assert d.mean_tokens == pytest.approx(x.mean(), rel=2e-3)
    assert d.mean_tokens == pytest.approx(200 * np.exp(0.8**2 / 2), rel=0.01)  # clip is far
    assert d.describe() == "lognormal median 200 sigma 0.8, clipped to [1, 4096]"


def test_zero_spread_is_a_point() -> None:
    d = LengthDist.parse("lognormal:7.4:0", "--prompt-tokens")
    assert set(d.sample(_rng(), 100).tolist()) == {7}
    assert d.mean_tokens == 7 and d.max_possible == 7


def test_empirical_file_and_legacy_bare_path(tmp_path: Path) -> None:
    f = tmp_path / "lens.txt"
    f.write_text("10 20\n\n30\n")
    d = LengthDist.parse(f"empirical:{f}", "--output-tokens")
    assert d == LengthDist.parse(str(f), "--output-tokens")
    x = d.sample(_rng(), 30_000)
    assert set(x.tolist()) == {10, 20, 30}
    assert d.mean_tokens == 20
    assert d.describe() == f"empirical {f} (3 values, 10 to 30)"


def test_empirical_values_above_the_limit_are_clipped(tmp_path: Path) -> None:
    f = tmp_path / "lens.txt"
    f.write_text("10\n1000\n")
    d = LengthDist.parse(f"empirical:{f}", "--output-tokens", max_tokens=100)
    assert set(d.sample(_rng(), 1000).tolist()) == {10, 100}
    assert d.mean_tokens == 55 and d.max_possible == 100
    assert d.describe().endswith(", clipped to [1, 100]")


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("10 20\n30 x\n", ":2: 'x'"),
        ("10\n0\n", ":2: '0'"),
        ("5\n\n-3\n", ":3: '-3'"),
        ("1.5\n", ":1: '1.5'"),
    ],
)
def test_empirical_bad_value_names_the_file_and_line(
    tmp_path: Path, content: str, where: str
) -> None:
    f = tmp_path / "lens.txt"
    f.write_text(content)
    with pytest.raises(InferlabError) as e:
        LengthDist.parse(f"empirical:{f}", "--prompt-tokens")
    msg = str(e.value)
    assert msg.startswith(f"--prompt-tokens {f}{where} is not a whole number")
    assert "\n" not in msg


def test_empirical_missing_or_empty_file(tmp_path: Path) -> None:
    with pytest.raises(InferlabError, match=r"cannot read .*nope.txt"):
        LengthDist.parse(f"empirical:{tmp_path / 'nope.txt'}", "--prompt-tokens")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    with pytest.raises(InferlabError, match="holds no lengths"):
        LengthDist.parse(f"empirical:{empty}", "--prompt-tokens")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "abc",
        "0",
        "-5",
        "1.5",
        "uniform:5",
        "uniform:5:2",
        "uniform:0:3",
        "uniform:a:3",
        "uniform:1:2:3",
        "normal:100",
        "normal:100:-1",
        "normal:0:10",
        "normal:nan:1",
        "lognormal:200:x",
        "lognormal:0:1",
        "lognormal:200:inf",
        "gamma:1:2",
        "3:",
        "2000",
        "uniform:2000:3000",
        "empirical:",
    ],
)
def test_malformed_text_is_one_line_listing_the_forms(text: str) -> None:
    with pytest.raises(InferlabError) as e:
        LengthDist.parse(text, "--output-tokens", max_tokens=1000)
    msg = str(e.value)
    assert msg.startswith(f"--output-tokens {text!r}: ")
    assert "uniform:LO:HI, normal:MEAN:SD, lognormal:MEDIAN:SIGMA or empirical:FILE" in msg
    assert "\n" not in msg


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(InferlabError, match="at least 1"):
        LengthDist.parse("5", "--prompt-tokens", max_tokens=0)


def test_same_seed_same_draws() -> None:
    d = LengthDist.parse("lognormal:100:1", "--prompt-tokens")
    assert np.array_equal(d.sample(_rng(9), 500), d.sample(_rng(9), 500))


DISTS = st.one_of(
    st.integers(1, 3000).map(str),
    st.tuples(st.integers(1, 3000), st.integers(0, 3000)).map(
        lambda t: f"uniform:{t[0]}:{t[0] + t[1]}"
    ),
    st.tuples(st.floats(1, 3000), st.floats(0, 5000)).map(lambda t: f"normal:{t[0]}:{t[1]}"),
    st.tuples(st.floats(1, 3000), st.floats(0, 4)).map(lambda t: f"lognormal:{t[0]}:{t[1]}"),
)


@settings(max_examples=80, deadline=None)
@given(text=DISTS, max_tokens=st.integers(3000, 6000), seed=st.integers(0, 2**32 - 1))
def test_every_draw_lies_within_one_and_the_limit(text: str, max_tokens: int, seed: int) -> None:
    d = LengthDist.parse(text, "--prompt-tokens", max_tokens)
    x = d.sample(_rng(seed), 2000)
    assert x.dtype == np.int64 and len(x) == 2000
    assert x.min() >= 1 and x.max() <= max_tokens and x.max() <= d.max_possible
    assert 1 <= d.mean_tokens <= max_tokens
