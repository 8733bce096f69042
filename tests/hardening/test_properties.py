"""Property-based checks (hypothesis): units round-trip, the physics keeps its invariants,
and the CLI keeps its promises (exit 0 or 2, one line on error, strict JSON) whatever
arguments it is given."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferlab import units
from inferlab.cli import build_parser
from inferlab.errors import UnitError
from inferlab.physics.capacity import capacity
from inferlab.physics.decode import decode_point
from inferlab.physics.measured import utilisation
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import STATED, HardwareSpec, with_overrides
from tests.hardening.cli_harness import check_promises, run

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# --- units -----------------------------------------------------------------
magnitudes = st.floats(min_value=1e-3, max_value=1e18, allow_nan=False, allow_infinity=False)


@SETTINGS
@given(magnitudes)
def test_bytes_round_trip(v: float) -> None:
    assert units.parse_bytes(units.fmt_bytes(v, digits=17)) == pytest.approx(v, rel=1e-12)


@SETTINGS
@given(magnitudes)
def test_bandwidth_round_trip(v: float) -> None:
    assert units.parse_bandwidth(units.fmt_bandwidth(v, digits=17)) == pytest.approx(v, rel=1e-12)


@SETTINGS
@given(magnitudes)
def test_flops_round_trip(v: float) -> None:
    assert units.parse_flops(units.fmt_flops(v, digits=17)) == pytest.approx(v, rel=1e-12)


@SETTINGS
@given(st.floats(min_value=1e-9, max_value=1e6))
def test_time_round_trip(v: float) -> None:
    assert units.parse_time(units.fmt_time(v, digits=17)) == pytest.approx(v, rel=1e-12)


@SETTINGS
@given(st.floats(min_value=1.0, max_value=1e15))
def test_count_round_trip(v: float) -> None:
    assert units.parse_count(units.fmt_count(v, digits=17)) == pytest.approx(v, rel=1e-12)


@SETTINGS
@given(st.integers(0, 10**6), st.sampled_from(["ki", "Ki", "Mi", "Gi", "Ti", "Pi"]))
def test_iec_prefixes_are_powers_of_two(n: int, prefix: str) -> None:
    power = {"k": 10, "K": 10, "M": 20, "G": 30, "T": 40, "P": 50}[prefix[0]]
    assert units.parse_bytes(f"{n}{prefix}B") == n * 2.0**power
    assert units.parse_bandwidth(f"{n} {prefix}B/s") == n * 2.0**power


PARSERS = [
    units.parse_bytes,
    units.parse_bandwidth,
    units.parse_flops,
    units.parse_time,
    units.parse_count,
    units.parse_rate,
]


@SETTINGS
@given(st.text(max_size=20), st.sampled_from(PARSERS))
def test_any_text_parses_or_raises_unit_error(text: str, parse: Callable[[str], float]) -> None:
    try:
        value = parse(text)
    except UnitError as e:
        assert repr(text) in str(e)  # the message quotes what was given
        return
    assert isinstance(value, float)


# --- physics ---------------------------------------------------------------
costs = st.builds(
    ModelCost.stated,
    weight_bytes=st.floats(1e6, 1e12),
    kv_bytes_per_token=st.one_of(st.just(0.0), st.floats(1e-3, 1e7)),  # as the CLI admits
    params=st.floats(1e6, 1e12),
)
hardware = st.builds(
    lambda bw, fl, mem: with_overrides(STATED, bw, fl, mem),
    st.floats(1e9, 1e14),
    st.floats(1e11, 1e17),
    st.floats(1e9, 1e13),
)


@SETTINGS
@given(costs, hardware, st.integers(1, 4096), st.integers(1, 512), st.integers(0, 10**6))
def test_step_time_non_decreasing_in_batch(
    c: ModelCost, hw: HardwareSpec, batch: int, more: int, ctx: int
) -> None:
    a = decode_point(c, hw, batch, ctx).step_time_s
    b = decode_point(c, hw, batch + more, ctx).step_time_s
    assert b >= a * (1 - 1e-12)


@SETTINGS
@given(costs, hardware, st.integers(1, 4096), st.integers(0, 10**6), st.integers(1, 10**5))
def test_step_time_non_decreasing_in_context(
    c: ModelCost, hw: HardwareSpec, batch: int, ctx: int, more: int
) -> None:
    a = decode_point(c, hw, batch, ctx).step_time_s
    b = decode_point(c, hw, batch, ctx + more).step_time_s
    assert b >= a * (1 - 1e-12)


@SETTINGS
@given(costs, hardware, st.integers(1, 4096), st.integers(0, 10**6))
def test_per_user_rate_under_the_ceiling(
    c: ModelCost, hw: HardwareSpec, batch: int, ctx: int
) -> None:
    ceiling = decode_point(c, hw, 1, ctx).tokens_per_s_per_user
    p = decode_point(c, hw, batch, ctx)
    assert p.tokens_per_s_per_user <= ceiling * (1 + 1e-12)
    assert p.tokens_per_s_total <= batch * ceiling * (1 + 1e-12)


@SETTINGS
@given(costs, hardware, st.integers(1, 512), st.integers(0, 10**5), st.floats(1.0, 1e3))
def test_mbu_at_most_one_when_measured_step_is_above_the_floor(
    c: ModelCost, hw: HardwareSpec, batch: int, ctx: int, slower: float
) -> None:
    p = decode_point(c, hw, batch, ctx)
    measured = p.step_time_s * slower
    u = utilisation(
        p.bytes_per_step,
        p.flops_per_step,
        measured,
        hw.bandwidth_bytes_per_s,
        hw.peak_flops(c.compute_dtype),
        p.step_time_s,
    )
    assert u.mbu <= 1 + 1e-12
    assert u.mfu <= 1 + 1e-12


@SETTINGS
@given(costs, hardware, st.integers(1, 10**6), st.floats(0.0, 1e10))
def test_max_batch_fits_and_one_more_does_not(
    c: ModelCost, hw: HardwareSpec, ctx: int, reserve: float
) -> None:
    cap = capacity(c, hw, ctx, reserve)
    used = cap.max_batch * cap.kv_bytes_per_sequence + cap.weight_bytes + reserve
    if cap.max_batch > 0:  # with 0, the weights (and reserve) alone may not fit
        assert used <= hw.memory_bytes * (1 + 1e-12)
    else:
        assert (
            cap.kv_bytes_per_sequence + cap.weight_bytes + reserve > hw.memory_bytes * (1 - 1e-12)
            or cap.kv_bytes_per_sequence == 0
        )
    if cap.kv_bytes_per_sequence > 0 and cap.free_for_kv_bytes > 0:
        more = (cap.max_batch + 1) * cap.kv_bytes_per_sequence + cap.weight_bytes + reserve
        assert more > hw.memory_bytes * (1 - 1e-12)


# --- the CLI -----------------------------------------------------------------
VALUES = [
    "0", "1", "2", "-1", "-0.5", "0.5", "3", "32", "4096", "-1/s", "5/s", "1e400", "1e-300",
    "nan", "inf", "-inf", "1" + "0" * 40, "1e-308", "1e-308B", "1e308PB", "16GB", "1kiB",
    "1PiB", "128KiB", "3.35TB/s",
    "1e-300B/s", "989TFLOPS", "14ms", "x", "", " ", "1,2", "0.3:3", "1:2", "h100-sxm",
    "llama-3-8b", "this-machine", "bf16", "int4", "fp7", "/nonexistent/x.gguf", "8000@10s",
]  # fmt: skip
# Verbs run to the end with any arguments (they are quick); the rest start servers, probes
# or long simulations, so they are driven only down their argument-error paths.
FULL_RUN = ["floor", "capacity", "cost", "amdahl", "models", "hardware", "report"]
ARGS_ONLY = ["bench", "demo", "probe", "serve", "simulate", "plan", "drill", "engine-bench"]
ARGS_ONLY += ["profile"]


def _flags(verb: str) -> list[str]:
    parser = build_parser(verb)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            sub = action.choices[verb]
            return [a.option_strings[-1] for a in sub._actions if a.option_strings][1:]
    raise AssertionError(verb)


@st.composite
def invocations(draw: st.DrawFn, verbs: list[str]) -> list[str]:
    verb = draw(st.sampled_from(verbs))
    flags = _flags(verb)
    argv = [verb]
    for _ in range(draw(st.integers(0, 6))):
        argv.append(draw(st.sampled_from(flags)))
        argv.append(draw(st.one_of(st.sampled_from(VALUES), st.text(max_size=8))))
    if verb in ("floor", "capacity"):
        argv += draw(
            st.sampled_from(
                [
                    [],
                    ["--model", "llama-3-8b", "--hardware", "h100-sxm"],
                    ["--weight-bytes", "16GB", "--bandwidth", "3.35TB/s", "--memory", "80GB"],
                ]
            )
        )
    if verb == "amdahl":
        argv += draw(
            st.lists(
                st.sampled_from(["0.3:3", "1:2", "0.5:1e400", "-1:2", "x"]), min_size=1, max_size=3
            )
        )
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No probe cache, no results/ folder in the source tree."""
    monkeypatch.setenv("INFERLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(invocations(FULL_RUN))
def test_quick_verbs_exit_0_or_2_with_strict_json(isolated: Path, argv: list[str]) -> None:
    check_promises(argv, run(argv))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(invocations(ARGS_ONLY))
def test_long_verbs_refuse_bad_arguments_in_one_line(isolated: Path, argv: list[str]) -> None:
    argv = [*argv, "--no-such-option"]  # keeps every run on the argument path
    r = run(argv)
    check_promises(argv, r)
    assert r.code == 2


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(invocations(["profile"]))
def test_profile_refuses_any_arguments_in_one_line_and_writes_nothing(
    isolated: Path, argv: list[str]
) -> None:
    """Past argparse too: no server listens on port 1, so every run ends on a refusal."""
    argv = [*argv, "--url", "http://127.0.0.1:1/v1"]  # the last --url wins: never a server
    r = run(argv)
    check_promises(argv, r)
    assert r.code == 2
    assert {p.name for p in isolated.iterdir()} <= {"cache"}, argv  # no folder, no file


def test_no_arguments_prints_the_usage() -> None:
    r = run([])
    assert r.code == 2 and "usage: inferlab" in r.err and "floor" in r.err


def test_help_exits_0() -> None:
    r = run(["floor", "--help"])
    assert r.code == 0 and "--weight-bytes" in r.out


def test_json_is_strict_where_values_are_infinite() -> None:
    r = run(["floor", "--weight-bytes", "16GB", "--bandwidth", "3.35TB/s", "--json"])
    check_promises(r.err.split(), r)
    assert r.code == 0
    from inferlab.jsonio import loads_strict

    d = loads_strict(r.out)
    assert d["peak_flops_per_s"] is None and math.isclose(d["decode_step_time_s"], 16e9 / 3.35e12)
    text = run(["floor", "--weight-bytes", "16GB", "--bandwidth", "3.35TB/s"]).out
    assert "peak FLOPS" in text and "null in --json" in text
    a = run(["amdahl", "1:2", "--json"])
    assert loads_strict(a.out)["ceiling_speedup"] is None
    assert "unbounded" in run(["amdahl", "1:2"]).out


# Values the flags accept, from the smallest to the largest admitted: the floor must turn
# every combination into numbers (or one clear line), never a ZeroDivisionError.
FLOOR_VALUES = {
    "--batch": ["1", "64", "100000", "1000000000000"],
    "--context": ["0", "4096", "1000000000000"],
    "--prompt": ["1", "8000", "1000000000000"],
    "--streams": ["1", "1000000000000"],
    "--chunk": ["1", "512", "1000000000000"],
    "--kernels": ["0", "1", "1000000000000"],
    "--launch-time": ["0", "4us", "1e-12", "1e30"],
    "--overhead": ["0", "1ms", "1e-12", "1e30"],
    "--measured-step": ["1e-12", "14ms", "1e30"],
    "--target-tokens-per-s": ["1e-12", "50", "1e30"],
    "--claimed-tokens-per-s": ["1e-12", "5000", "1e30"],
    "--draft-tokens": ["1", "4", "1000000000000"],
    "--acceptance": ["0", "0.7", "1"],
    "--draft-cost": ["0", "0.05", "1e30"],
    "--gpu-hour": ["0", "3", "1e30"],
    "--kv-bytes-per-token": ["0", "1e-12", "128KiB", "1e30"],
    "--flops": ["1e-12", "989TFLOPS", "1e30"],
    "--memory": ["0", "80GB", "1e30"],
    "--weight-dtype": ["bf16", "int4", "fp8"],
}
FLOOR_BASES = [
    ["--model", "llama-3-8b", "--hardware", "h100-sxm"],
    ["--model", "deepseek-v3", "--hardware", "h200"],
    ["--model", "mixtral-8x7b", "--hardware", "a100-80gb", "--tp", "2"],
    ["--weight-bytes", "16GB", "--bandwidth", "3.35TB/s"],
    ["--weight-bytes", "1e-12", "--bandwidth", "1e30"],
    ["--weight-bytes", "1e30", "--bandwidth", "1e-12"],
    ["--weight-bytes", "0", "--bandwidth", "1TB/s", "--overhead", "1ms"],
]


@st.composite
def floor_invocations(draw: st.DrawFn) -> list[str]:
    argv = ["floor", *draw(st.sampled_from(FLOOR_BASES))]
    for flag in draw(st.lists(st.sampled_from(sorted(FLOOR_VALUES)), max_size=8, unique=True)):
        argv += [flag, draw(st.sampled_from(FLOOR_VALUES[flag]))]
    argv += draw(st.sampled_from([[], ["--levers"], ["--levers", "--explain"]]))
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(floor_invocations())
def test_floor_with_admitted_extremes(isolated: Path, argv: list[str]) -> None:
    check_promises(argv, run(argv))


# --- summaries of another shape -------------------------------------------------------
REAL_SUMMARY = Path(__file__).parents[1] / "data" / "llama_cpu_sweep_summary.json"
SWAPS = [None, "x", -1, 0, 1.5, [], {}, True, 10**30, [1, "a"], {"p50": "x"}]


def _paths(o: object, p: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    out = [p] if p else []
    if isinstance(o, dict):
        for k, v in o.items():
            out += _paths(v, (*p, k))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            out += _paths(v, (*p, i))
    return out


@st.composite
def mutated_summaries(draw: st.DrawFn) -> dict[str, object]:
    import copy
    import json

    s: dict[str, object] = copy.deepcopy(json.loads(REAL_SUMMARY.read_text()))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(s)))
        parent: object = s
        try:
            for k in path[:-1]:
                parent = parent[k]  # type: ignore[index]
            if isinstance(parent, dict) and draw(st.booleans()):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = copy.deepcopy(draw(st.sampled_from(SWAPS)))  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed this path
    return s


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(mutated_summaries(), st.booleans())
def test_report_and_calibrate_on_summaries_of_another_shape(
    isolated: Path, summary: dict[str, object], calibrate: bool
) -> None:
    from inferlab.jsonio import dumps

    run_dir = isolated / "run"
    run_dir.mkdir(exist_ok=True)
    (run_dir / "summary.json").write_text(dumps(summary))
    argv = ["report", str(run_dir)]
    if calibrate:
        argv = ["simulate", "--model", "smollm2-135m", "--hardware", "h100-sxm", "--users", "2",
                "--calibrate", str(run_dir)]  # fmt: skip
    r = run(argv)
    check_promises(argv, r)
    if r.code == 2:
        assert "summary.json" in r.err or "--calibrate" in r.err or "calibrat" in r.err, r.err
