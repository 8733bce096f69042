"""The physics verbs and `inferlab --help` answer at once: each imports the physics core
(units, errors, specs, physics), its own command module and, for `floor`, its words, and
nothing else: no other verb's module, none of the flag code of bench or sim, no
third-party library, none of the heavy standard modules. Checked by module names in a
fresh interpreter, not by timing (benchmarks/verb_startup.py times them)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from inferlab.cli import VERBS, build_parser

_PRESET = ["--model", "llama-3-8b", "--hardware", "h100-sxm"]
ARGV = {
    "--help": ["--help"],
    "floor": ["floor", *_PRESET],
    "floor --json": ["floor", *_PRESET, "--json"],
    "capacity": ["capacity", *_PRESET, "--context", "8192"],
    "cost": ["cost", "--gpu-hour", "3", "--tokens-per-s", "200"],
    "amdahl": ["amdahl", "0.3:3", "0.5:2"],
    "models": ["models"],
    "hardware": ["hardware"],
}

_CLI = {"inferlab", "inferlab.cli", "inferlab.errors", "inferlab.signals"}
_ANSWER = _CLI | {"inferlab.commands", "inferlab.commands.flags", "inferlab.commands.flags.output"}
_CATALOGUES = {
    "inferlab.units",
    "inferlab.specs",
    "inferlab.specs.cost",
    "inferlab.specs.datafiles",
    "inferlab.specs.dtypes",
    "inferlab.specs.hardware",
    "inferlab.specs.model",
}
_SPEC_FLAGS = _CATALOGUES | {
    "inferlab.commands.flags.argtypes",
    "inferlab.commands.flags.common",
    "inferlab.specs.parallel",
    "inferlab.specs.resolve",
    "inferlab.specs.stated",
    "inferlab.physics",
    "inferlab.physics.capacity",
}
_FLOOR = _SPEC_FLAGS | {
    "inferlab.commands.floor",
    "inferlab.physics.decode",
    "inferlab.physics.measured",
    "inferlab.physics.roofline",
    "inferlab.report",
    "inferlab.report.floor_text",
    "inferlab.vocab",
}
ALLOWED = {
    "--help": _CLI,
    "floor": _FLOOR,
    "floor --json": _FLOOR | {"inferlab.jsonio"},
    "capacity": _SPEC_FLAGS | {"inferlab.commands.capacity"},
    "cost": _ANSWER
    | {
        "inferlab.commands.flags.argtypes",
        "inferlab.units",
        "inferlab.physics",
        "inferlab.physics.price",
    }
    | {"inferlab.commands.cost"},
    "amdahl": _ANSWER | {"inferlab.physics", "inferlab.physics.amdahl", "inferlab.commands.amdahl"},
    "models": _ANSWER | _CATALOGUES | {"inferlab.commands.catalog"},
    "hardware": _ANSWER | _CATALOGUES | {"inferlab.commands.catalog"},
}
for _name in ALLOWED:
    if _name != "--help":
        ALLOWED[_name] |= _ANSWER
# Standard modules a quick answer has no use for (each costs milliseconds to import).
HEAVY_STDLIB = (
    "asyncio",
    "concurrent",
    "difflib",
    "email",
    "http",
    "importlib.resources",
    "multiprocessing",
    "shutil",
    "socket",
    "sqlite3",
    "ssl",
    "subprocess",
    "tempfile",
    "traceback",
    "zipfile",
)

CODE = """
import contextlib, io, json, sys
before = set(sys.modules)
from inferlab.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:  # --help
        code = e.code
print(json.dumps({"code": code, "modules": sorted(set(sys.modules) - before)}))
"""


def _imported(argv: list[str]) -> tuple[int, set[str]]:
    p = subprocess.run(
        [sys.executable, "-c", CODE, *argv], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out["code"], set(out["modules"])


@pytest.mark.slow  # a fresh interpreter: this process has imported everything already
@pytest.mark.parametrize("name", list(ARGV))
def test_a_physics_verb_imports_the_physics_core_only(name: str) -> None:
    code, modules = _imported(ARGV[name])
    assert code == 0
    ours = {m for m in modules if m == "inferlab" or m.startswith("inferlab.")}
    assert ours <= ALLOWED[name], f"{name} imports {sorted(ours - ALLOWED[name])}"
    third_party = {
        m.split(".")[0] for m in modules if m.split(".")[0] not in sys.stdlib_module_names
    } - {"inferlab"}
    assert not third_party, f"{name} imports {sorted(third_party)}"
    heavy = [m for m in HEAVY_STDLIB if m in modules]
    assert not heavy, f"{name} imports {heavy}"


def test_the_verb_list_is_the_verbs_own() -> None:
    """`inferlab --help` lists each verb from cli.VERBS without importing it: every line
    there is the one its module gives argparse, in the same order."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and a.dest == "verb")
    listed = {a.dest: a.help for a in sub._get_subactions()}
    assert list(listed) == list(VERBS)
    assert listed == {verb: help_line for verb, (_, help_line) in VERBS.items()}
