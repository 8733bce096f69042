"""Library errors name config fields; the CLI words them as the flags that set them.

The simulator never knows a flag's name (sim/ raises errors.ConfigError with its fields in
braces); `inferlab simulate` and `plan` still tell the user which flag to fix."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from inferlab.commands.flags.names import FLAG_NAMES
from inferlab.errors import ConfigError, literal, worded
from inferlab.sim.limits import Limits, SimulationTooLarge, at_least
from tests.clirun import RunCli

SRC = Path(__file__).parents[1] / "src" / "inferlab"
SIM = SRC / "sim"
# The packages whose errors name config fields (the CLI words them as flags).
FIELD_WORDED = ("sim", "load", "slo", "metrics", "demo")


def test_a_config_error_names_its_fields_alone_and_flags_when_worded() -> None:
    e = ConfigError("{users} 3 x {requests_per_user} 4 = 12 requests")
    assert str(e) == "users 3 x requests_per_user 4 = 12 requests"
    assert e.worded(FLAG_NAMES) == "--users 3 x --requests-per-user 4 = 12 requests"
    assert worded("{unknown} stays a field; {rate}", FLAG_NAMES) == "unknown stays a field; --rate"


def test_what_a_user_typed_keeps_its_braces() -> None:
    e = ConfigError(f"cannot read {{injected}} {literal(repr('{x}@2s'))}")
    assert e.worded(FLAG_NAMES) == "cannot read --inject-prompt '{x}@2s'"
    assert str(e) == "cannot read injected '{x}@2s'"
    assert worded("{not a field} {", {}) == "{not a field} {"


def test_the_simulators_limits_name_fields() -> None:
    with pytest.raises(ConfigError) as got:
        at_least(0, 1, "requests_per_user")
    assert str(got.value) == "requests_per_user must be >= 1 (got 0)"
    with pytest.raises(SimulationTooLarge) as too:
        Limits(max_requests=10).check_requests(20, "{requests_per_level}")
    assert "--" not in str(too.value) and "max_requests" in str(too.value)
    assert too.value.worded(FLAG_NAMES).startswith("--requests-per-level = 20 requests")


@pytest.mark.parametrize("package", FIELD_WORDED)
def test_every_field_these_packages_name_has_a_flag(package: str) -> None:
    """A field put in braces is one the CLI can word (else the user reads a field)."""
    missing = _raised_fields(SRC / package) - set(FLAG_NAMES)
    assert not missing, missing


def _raised_fields(folder: Path) -> set[str]:
    """Fields in braces in the raise statements and calls (at_least, check_requests, ...)."""
    out: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Raise | ast.Call):
                continue
            for c in ast.walk(node):
                if isinstance(c, ast.Constant) and isinstance(c.value, str):
                    out |= {p.split("}", 1)[0] for p in c.value.split("{")[1:] if "}" in p}
                    if isinstance(node, ast.Call) and ast.unparse(node.func) == "at_least":
                        out.add(c.value)
    return {f for f in out if f.isidentifier() and f.islower()}


@pytest.mark.parametrize("package", FIELD_WORDED)
def test_no_error_these_packages_raise_names_a_flag(package: str) -> None:
    """Their raise statements word config fields, not inferlab's flags (another verb's
    flags, named as advice, e.g. `engine-bench --batch`, are not the config's)."""
    flags = set(FLAG_NAMES.values())
    wrong = []
    for path in sorted((SRC / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                words = ast.unparse(node.exc).replace("'", " ").replace('"', " ").split()
                named = {w.strip(",.;:()") for w in words} & flags
                wrong += [f"{path.relative_to(SRC)}:{node.lineno} {f}" for f in sorted(named)]
    assert not wrong, wrong


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--concurrency", "4", "--requests-per-user", "0"), "--requests-per-user must be >= 1"),
        (("--rate", "5/s", "--duration", "1000000s"), "--rate 5/s x --duration 1e+06s"),
        (("--concurrency", "4", "--efficiency", "2"), "--efficiency must be in (0, 1]"),
        (("--concurrency", "4", "--find-max-load", "concurrency"), "--find-max-load needs --slo"),
    ],
)
def test_the_cli_words_the_simulators_errors_as_flags(
    run_cli: RunCli, flags: tuple[str, ...], said: str
) -> None:
    code, _, err = run_cli("simulate", "--model", "llama-3-8b", "--hardware", "h100-sxm", *flags)
    assert code == 2
    assert f"inferlab simulate: error: {said}" in err
