"""The machine's speed between two runs, from the drift canary both took
(metrics/speed_shift.py): the ratio, whether it lies beyond both runs' own canary spread,
the readings around one level, and the time split read with the move. Every reading here
is a recorded number, not a timing."""

from __future__ import annotations

import pytest

from inferlab.console.predict_text import profile_shift_words
from inferlab.metrics.speed_shift import (
    engine_shift,
    level_readings_ms,
    profile_shift,
    speed_shift,
    split_line,
)
from inferlab.summary import Canary, CanaryReading, EngineSplit


def canary(*readings: tuple[float | None, str | None, int | None], rest: int = 0) -> Canary:
    """A canary record of these (TPOT ms, the level it preceded, its repeat) readings,
    the first `rest` at rest."""
    return Canary(
        prompt="p",
        output_tokens=16,
        slot=0,
        rest_tpot_ms=None,
        rest_spread=None,
        drift_threshold=0.05,
        readings=tuple(
            CanaryReading(at_s=float(i), tpot_ms=ms, at_rest=i < rest, before=b, repeat=r)
            for i, (ms, b, r) in enumerate(readings)
        ),
    )


def test_the_ratio_of_the_medians_beyond_both_spreads_says_how_much_slower() -> None:
    s = speed_shift("profile", [14.0, 14.1, 14.3], [16.4, 16.6, 16.9])
    assert s is not None
    assert s.reference_tpot_ms == 14.1 and s.measured_tpot_ms == 16.6
    assert s.ratio == pytest.approx(16.6 / 14.1)  # 1.177: 18 % slower
    assert s.reference_spread == pytest.approx(0.3 / 14.1)  # 2.1 %
    assert s.measured_spread == pytest.approx(0.5 / 16.6)  # 3.0 %
    assert s.threshold == 0.05 and s.beyond_noise  # both spreads under the 5 % floor
    assert profile_shift_words(s) == (
        "the machine ran 18 % slower during the measurement than during the profile "
        "(canary 14.1 -> 16.6 ms), beyond both runs' own canary spread (profile 2 %, "
        "measurement 3 %; a move over 5 % is beyond them)"
    )


def test_a_move_within_either_runs_own_spread_is_not_told_from_noise() -> None:
    s = speed_shift("profile", [12.0, 14.1, 17.0], [12.4, 12.6, 12.5])
    assert s is not None and s.ratio == pytest.approx(12.5 / 14.1)  # 11 % faster
    assert s.threshold == pytest.approx(5.0 / 14.1) and not s.beyond_noise  # 35 % spread
    words = profile_shift_words(s)
    assert words.startswith("the machine ran 11 % faster during the measurement")
    assert "within both runs' own canary spread (profile 35 %, measurement 2 %" in words
    assert words.endswith(": the canary cannot tell the two speeds apart")


def test_no_canary_on_either_side_is_no_comparison() -> None:
    measured = canary((10.0, "c=1", None), rest=1)
    assert profile_shift(None, measured) is None
    assert profile_shift(measured, canary((None, "c=1", None), rest=1)) is None  # all failed
    assert speed_shift("engine_alone", [], [10.0]) is None


def test_a_levels_readings_are_the_ones_just_before_and_after_each_of_its_runs() -> None:
    run = canary(
        (10.0, "c=1", None),
        (11.0, "c=1", None),
        (12.0, "c=1", None),  # the last at rest: just before c=1
        (13.0, "c=2", None),  # after c=1, before c=2
        (None, None, None),  # after c=2: failed
        rest=3,
    )
    assert level_readings_ms(run, "c=1") == [12.0, 13.0]
    assert level_readings_ms(run, "c=2") == [13.0]
    # bench --repeat 2, interleaved: c=1, c=2, c=1, c=2
    rep = canary(
        (10.0, "c=1", 0),
        (10.0, "c=1", 0),
        (11.0, "c=2", 0),
        (12.0, "c=1", 1),
        (13.0, "c=2", 1),
        (14.0, None, None),
        rest=2,
    )
    assert level_readings_ms(rep, "c=1") == [10.0, 11.0, 12.0, 13.0]
    assert level_readings_ms(rep, "c=2") == [11.0, 12.0, 13.0, 14.0]
    s = engine_shift([13.0], rep, "c=2")
    assert s is not None and s.level == "c=2" and s.measured_tpot_ms == 12.5


def split(served_ms: float, engine_ms: float) -> EngineSplit:
    served, engine = served_ms / 1e3, engine_ms / 1e3
    return EngineSplit(
        batch=1,
        batch_source="measured",
        served_tpot_s=served,
        engine_step_time_s=engine,
        engine_noise_s=0.0002,
        floor_s=None,
        kernel_overhead_s=None,
        serving_overhead_s=served - engine,
        floor_share=None,
        kernel_share=None,
        serving_share=(served - engine) / served,
        largest="engine",
    )


def test_a_split_read_at_another_machine_speed_says_it_is_not_reliable_at_that_size() -> None:
    # the split: served 15.2 ms, the engine alone 20.7 ms: serving -5.5 ms (-36 %);
    # the canary read 13.0 ms around the engine alone, 9.5 ms around c=1
    s = speed_shift("engine_alone", [12.9, 13.0, 13.1], [9.4, 9.6], "c=1")
    assert s is not None and s.beyond_noise and s.ratio == pytest.approx(9.5 / 13.0)
    line = split_line(s, split(15.2, 20.7))
    assert line.startswith(
        "the canary ran 37 % slower during the engine-alone measurement than during the "
        "served level c=1 (canary TPOT 13.0 ms against 9.5 ms), beyond both runs' own canary "
        "spread (engine alone 2 %, c=1 2 %; a move over 5 % is beyond them)"
    )
    # the engine's step at c=1's speed: 20.7 x 9.5 / 13.0 = 15.13 ms, 5.57 ms less
    assert "that move alone is -5.6 ms of the engine's step against serving -5.5 ms" in line
    assert ": the split is not reliable at that size;" in line
    assert line.endswith("serving would be +0.1 ms (+0 %)")


def test_a_serving_part_larger_than_the_move_keeps_its_sign() -> None:
    s = speed_shift("engine_alone", [10.0, 10.0], [11.0, 11.0], "c=4")
    assert s is not None and s.beyond_noise  # 10 % slower at c=4 than the engine alone
    line = split_line(s, split(30.0, 20.0))  # serving +10 ms; the move 2 ms
    assert "that move alone is +2.0 ms of the engine's step against serving +10.0 ms" in line
    assert "serving's part is larger than that move: its sign holds" in line
    assert line.endswith("serving would be +8.0 ms (+27 %)")


def test_within_noise_the_split_is_read_at_one_speed() -> None:
    s = speed_shift("engine_alone", [10.0, 10.3], [10.1, 10.2], "c=1")
    assert s is not None and not s.beyond_noise
    line = split_line(s, split(15.2, 20.7))
    assert line.startswith("the canary ran 0 % slower during the engine-alone measurement")
    assert line.endswith("(engine alone 3 %, c=1 1 %; a move over 5 % is beyond them): "
                         "the split is read at one machine speed")  # fmt: skip
