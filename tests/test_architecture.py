"""The house rules, checked on the source (AST), so they stay true.

- no function in src/ longer than 60 lines, no parameter list over 7;
- imports point one way: specs -> physics -> (bench -> metrics) -> report -> console, with
  the neutral value modules (records, summary, jsonrecord, vocab, jsonio, units, errors,
  address) below everything;
- no import cycle between packages, nor between files (lazy imports inside functions
  count too: they are cycles that only wait to be called);
- arrival instants are drawn in src/inferlab/load/ only (one spine for bench and sim).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src" / "inferlab"
MAX_LINES = 60
MAX_PARAMS = 7

# path relative to src/inferlab :: function name -> why it may still break a rule.
# Short on purpose: each entry is a debt with an owner.
EXEMPT: dict[str, str] = {}

# Neutral value modules: importable from anywhere, importing no package of inferlab.
NEUTRAL = {
    "records", "summary", "jsonio", "jsonrecord", "vocab", "units", "errors", "__init__",
    "address", "slo", "httpbody", "signals",
}  # fmt: skip
# Values that live in the package whose idea they are, yet a neutral module holds them (the
# summary holds the engine-alone's result): each imports only neutral modules itself, and
# any package may import it, as it may a neutral module.
NEUTRAL_VALUES = {"inferlab.engines.result"}
TOP_LEVEL_MAX = 10  # neutral modules at the top; more means one belongs in a package
# package -> packages it must never import (directly, or lazily inside a function).
FORBIDDEN = {
    "specs": {"physics", "bench", "metrics", "report", "sim", "commands", "probe", "engines"},
    "physics": {"bench", "metrics", "report", "sim", "commands", "probe", "engines"},
    "metrics": {"bench", "report", "sim", "commands", "engines"},
    "report": {"bench", "sim", "commands", "engines"},
    "sim": {"bench", "report", "commands", "engines"},
    "drill": {"bench", "metrics", "report", "sim", "commands", "probe", "engines"},
    # bench measures and prints nothing: the console package shows what it did
    "bench": {"report", "console", "sim", "commands"},
    # What is asked (load/) sits below both sides that ask it: bench measures, sim predicts.
    "load": {
        "bench",
        "sim",
        "metrics",
        "report",
        "commands",
        "probe",
        "engines",
        "servermetrics",
        "watch",
        "drill",
    },
    # Other tools' files are read into the summary bench writes: never through bench or sim.
    "peers": {"bench", "sim", "commands", "report", "console", "watch", "drill"},
    # SLO values sit beside summary.py (it holds their blocks): below every package.
    # The demo's steps run below the CLI: commands/demo.py only reads its flags into a config.
    "demo": {"commands"},
    "slo": {"specs", "physics", "bench", "metrics", "report", "sim", "commands", "probe"}
    | {"engines", "servermetrics", "load", "drill", "watch", "console"},
}
# --- Every package has a rule (issue 38): the import layers, bottom first, read from the
# imports themselves. Data flows specs -> physics -> load -> (bench | sim) -> metrics -> report
# (DESIGN.md); imports point down these layers: a package imports only packages of a lower
# layer (and the neutral modules), never one beside it or above it.
LAYERS: tuple[frozenset[str], ...] = (
    # what things are, what is asked and promised, real servers, what servers say
    frozenset({"specs", "load", "slo", "engines", "servermetrics"}),
    frozenset({"physics", "probe"}),  # what the hardware allows; what a machine has
    frozenset({"metrics", "drill"}),  # raw records -> numbers; the cards
    frozenset({"bench", "peers", "watch"}),  # measure a server, read other tools, watch one
    frozenset({"profile", "report", "testing"}),  # probes -> a fit; tables and plots; fakes
    frozenset({"sim"}),  # what a server would do (a profile is one of its step times)
    frozenset({"console"}),  # progress and words of a run, bench's and sim's
    frozenset({"demo"}),  # the demo's story, all of the above
    frozenset({"commands"}),  # the verbs: flags -> typed config -> one call -> print
)
for _i, _layer in enumerate(LAYERS):
    for _pkg in _layer:
        FORBIDDEN.setdefault(_pkg, set()).update(frozenset().union(*LAYERS[_i:]) - {_pkg})


def _packages() -> set[str]:
    return {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}


def test_every_package_has_an_import_rule() -> None:
    """A new package takes its place in LAYERS (so FORBIDDEN states what it must not import)."""
    placed = [pkg for layer in LAYERS for pkg in layer]
    assert len(placed) == len(set(placed)), "a package in two layers"
    assert _packages() == set(placed), _packages() ^ set(placed)
    assert _packages() <= set(FORBIDDEN)


def test_the_checker_counts_type_only_and_lazy_imports(tmp_path: Path) -> None:
    code = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from inferlab.sim.scheduler import Policy\n"
        "def f():\n    import inferlab.units\n"
    )
    (tmp_path / "m.py").write_text(code)
    found = set(_imports(tmp_path / "m.py"))
    assert {"inferlab.sim.scheduler", "inferlab.units"} <= found


# --- end of the layers block

# physics stays numeric (its words are report/floor_text.py); bench draws no progress bars
THIRD_PARTY_FORBIDDEN = {"report": {"aiohttp"}, "bench": {"rich"}, "physics": {"rich"}}


def _modules() -> dict[str, Path]:
    """Dotted module name (inferlab.x.y) -> file."""
    out = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(path: Path) -> Iterator[str]:
    """Every module a file imports: top level, inside a function (a cycle that only waits to be
    called) or under `if TYPE_CHECKING:` (a type-only cycle is still a cycle between modules)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:  # `from inferlab import units` imports a module
                sub = f"{node.module}.{a.name}"
                yield sub if sub in MODULES else node.module


def _local_imports(module: str) -> set[str]:
    return {m for m in _imports(MODULES[module]) if m in MODULES and m != module}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _functions() -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{rel}::{node.name}", node


def _n_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return len([n for n in names if n not in ("self", "cls")])


def test_functions_are_short_and_take_few_parameters() -> None:
    too_long, too_many = [], []
    for key, fn in _functions():
        if key in EXEMPT:
            continue
        n_lines = (fn.end_lineno or fn.lineno) - fn.lineno + 1
        if n_lines > MAX_LINES:
            too_long.append(f"{key} ({n_lines} lines)")
        if _n_params(fn) > MAX_PARAMS:
            too_many.append(f"{key} ({_n_params(fn)} parameters)")
    assert not too_long, f"over {MAX_LINES} lines: {too_long}"
    assert not too_many, f"over {MAX_PARAMS} parameters (group them in a dataclass): {too_many}"


def test_exemptions_are_still_needed() -> None:
    """An exemption whose function got fixed (or removed) is deleted, not kept."""
    found = dict(_functions())
    stale = []
    for key in EXEMPT:
        fn = found.get(key)
        if fn is None:
            stale.append(f"{key} (gone)")
        elif (fn.end_lineno or 0) - fn.lineno + 1 <= MAX_LINES and _n_params(fn) <= MAX_PARAMS:
            stale.append(f"{key} (now within the rules)")
    assert not stale, f"remove from EXEMPT: {stale}"


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_one_way(package: str) -> None:
    wrong = []
    for module, path in MODULES.items():
        if _package(module) != package:
            continue
        for imp in _imports(path):
            if imp in NEUTRAL_VALUES:
                continue
            target = _package(imp) if imp in MODULES else imp.split(".")[0]
            if target in FORBIDDEN[package] or target in THIRD_PARTY_FORBIDDEN.get(package, ()):
                wrong.append(f"{module} imports {imp}")
    assert not wrong, wrong


def test_neutral_modules_import_no_package() -> None:
    wrong = [
        f"inferlab.{name} imports {imp}"
        for name in NEUTRAL - {"__init__"}
        if f"inferlab.{name}" in MODULES
        for imp in _local_imports(f"inferlab.{name}")
        if _package(imp) not in NEUTRAL and imp not in NEUTRAL_VALUES
    ]
    wrong += [
        f"{value} imports {imp}"
        for value in NEUTRAL_VALUES
        for imp in _local_imports(value)
        if _package(imp) not in NEUTRAL
    ]
    assert not wrong, wrong


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return [*stack[stack.index(m) :], m]
            if m not in state and (found := visit(m)):
                return found
        state[n] = 2
        stack.pop()
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_no_import_cycle_between_files() -> None:
    graph = {m: _local_imports(m) for m in MODULES}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def _cli_is_commands(module: str) -> str:
    """cli.py is the command line's entry: one layer with commands/ (a verb may run it)."""
    return "commands" if module == "inferlab.cli" else _package(module)


def test_no_import_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for m in MODULES:
        pkg = _cli_is_commands(m)
        deps = {_cli_is_commands(i) for i in _local_imports(m)} - {pkg, "__init__"}
        graph.setdefault(pkg, set()).update(deps)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_checker_finds_a_cycle_and_a_long_function() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    fn = ast.parse("def f(a, b, c, d, e, f, g, h):\n" + "    x = 1\n" * 60).body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert _n_params(fn) == 8 and (fn.end_lineno or 0) - fn.lineno + 1 == 61


# Random draws that make arrival instants (stdlib random and numpy Generator / np.random).
ARRIVAL_DRAWS = {"expovariate", "gammavariate", "exponential", "gamma", "poisson", "weibull"}


def _arrival_draws(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ARRIVAL_DRAWS
            and ast.unparse(node.func.value) != "math"
        ):
            yield f"line {node.lineno}: {ast.unparse(node.func)}"


def test_arrivals_are_drawn_only_in_load() -> None:
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("load/"):
            continue
        wrong += [f"{rel} {d}" for d in _arrival_draws(ast.parse(path.read_text()))]
    assert not wrong, f"arrivals drawn outside src/inferlab/load/: {wrong}"


def test_the_arrival_checker_finds_a_draw() -> None:
    code = "import random\nrng = random.Random(0)\nt = rng.expovariate(4.0) + g.gamma(0.5)\n"
    assert len(list(_arrival_draws(ast.parse(code)))) == 2
    assert not list(_arrival_draws(ast.parse("import math\nx = math.gamma(3)\n")))


# Where a use keeps a definition alive: the package and the scripts that ship beside it.
USERS = [SRC, *(SRC.parents[1] / d for d in ("benchmarks", "exercises", "contrib"))]
ENTRY_POINTS = {("inferlab.cli", "main")}  # pyproject's [project.scripts]


def _definitions(tree: ast.Module) -> Iterator[str]:
    """A module's top-level functions and classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name


def _uses(module: str | None, tree: ast.AST, modules: set[str]) -> Iterator[tuple[str, str]]:
    """(module, name) for each definition a file may use: any name of its own module, a
    name imported from a module, and the attributes of a module it imports whole."""
    words: set[str] = set()
    whole: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.isidentifier():  # getattr(module, "name")
                words.add(node.value)
        elif isinstance(node, ast.Import):
            whole.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                if sub in modules:
                    whole.add(sub)
                else:
                    yield node.module, a.name
    for m in whole | ({module} if module else set()):
        yield from ((m, w) for w in words)


def unused(trees: dict[str, ast.Module], users: dict[str | None, list[ast.Module]]) -> list[str]:
    """`module::name` of each top-level function or class that no user refers to."""
    used = set(ENTRY_POINTS)
    for module, user_trees in users.items():
        for tree in user_trees:
            used.update(_uses(module, tree, set(trees)))
    return [
        f"{module}::{name}"
        for module, tree in trees.items()
        for name in _definitions(tree)
        if (module, name) not in used
    ]


def _parsed(folder: Path) -> list[ast.Module]:
    return [ast.parse(p.read_text()) for p in folder.rglob("*.py")] if folder.is_dir() else []


def test_every_function_and_class_in_src_is_used_outside_tests() -> None:
    """A definition only tests call is dead code kept alive by its tests: remove both."""
    trees = {m: ast.parse(path.read_text()) for m, path in MODULES.items()}
    users: dict[str | None, list[ast.Module]] = {m: [t] for m, t in trees.items()}
    users[None] = [t for folder in USERS[1:] for t in _parsed(folder)]
    dead = unused(trees, users)
    assert not dead, f"used by nothing but their tests (remove them and those tests): {dead}"


def test_the_unused_checker_finds_a_dead_function() -> None:
    src = ast.parse("def used():\n    pass\n\ndef dead():\n    pass\n")
    caller = ast.parse("from m import used\nused()\n")
    other = ast.parse("def dead():\n    pass\n\ndead()\n")  # another module's `dead`
    assert unused({"m": src, "o": other}, {None: [caller], "o": [other]}) == ["m::dead"]


# commands/: each verb (commands/<verb>.py) translates its flags; what verbs share are the
# flag groups under commands/flags/, never another verb.


def _verb_imports() -> set[tuple[str, str]]:
    found = set()
    for module in MODULES:
        if _package(module) != "commands" or module.count(".") != 2:
            continue
        for imp in _local_imports(module):
            if _package(imp) == "commands" and imp.count(".") == 2:
                found.add((module.rsplit(".", 1)[1], imp.rsplit(".", 1)[1]))
    return found


def test_no_verb_imports_another_verb() -> None:
    wrong = _verb_imports()
    assert not wrong, f"a verb imports another verb's module (share a flag helper): {wrong}"


# Only commands/ knows argparse: the library sees frozen configs, never a parsed Namespace.
# The fake servers are programs of their own (`python -m inferlab.testing.fake_server`, which a
# test starts as a process): their `main()` reads its own few flags.
ARGPARSE_HOMES = ("commands/", "cli.py")
ARGPARSE_EXEMPT = {
    "testing/fake_server.py": "a standalone fake server's own command line (python -m)",
    "testing/fake_steps.py": "a standalone fake llama-server's own command line (python -m)",
}


def _library_files() -> Iterator[tuple[str, ast.Module]]:
    """(path relative to src/inferlab, tree) of every module outside commands/ and cli.py."""
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if not rel.startswith(ARGPARSE_HOMES):
            yield rel, ast.parse(path.read_text())


def _argparse_uses(tree: ast.AST) -> Iterator[str]:
    """Imports of argparse and annotations that name a Namespace or a parser."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names):
            yield f"line {node.lineno}: import argparse"
        elif isinstance(node, ast.ImportFrom) and node.module == "argparse":
            yield f"line {node.lineno}: from argparse import ..."
        elif isinstance(node, ast.arg) and node.annotation is not None:
            text = ast.unparse(node.annotation)
            if "Namespace" in text or "ArgumentParser" in text:
                yield f"line {node.lineno}: parameter {node.arg}: {text}"


def test_only_commands_know_argparse() -> None:
    wrong = [
        f"{rel} {use}"
        for rel, tree in _library_files()
        if rel not in ARGPARSE_EXEMPT
        for use in _argparse_uses(tree)
    ]
    assert not wrong, f"argparse outside commands/ (take a typed config instead): {wrong}"


def _namespace_writes(tree: ast.AST) -> Iterator[str]:
    """Attribute writes onto a parsed Namespace: to a parameter annotated Namespace (or a
    name bound by parse_args()), by assignment, setattr or vars(...)[key] = ..."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and "Namespace" in ast.unparse(node.annotation or ast.Pass()):
            names.add(node.arg)
        elif isinstance(node, ast.Assign) and "parse_args(" in ast.unparse(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(tree):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign | ast.AnnAssign)
            else []
        )
        for t in targets:
            base = t.value if isinstance(t, ast.Attribute | ast.Subscript) else None
            if isinstance(base, ast.Call) and ast.unparse(base.func) == "vars":
                base = base.args[0] if base.args else None
            if isinstance(base, ast.Name) and base.id in names:
                yield f"line {node.lineno}: {ast.unparse(t)} = ..."
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "setattr" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Name) and first.id in names:
                yield f"line {node.lineno}: {ast.unparse(node)}"


def test_no_code_writes_onto_a_namespace() -> None:
    """The parsed flags are read, never amended: what a command derives goes into its config."""
    wrong = [
        f"{path.relative_to(SRC).as_posix()} {w}"
        for path in sorted(SRC.rglob("*.py"))
        for w in _namespace_writes(ast.parse(path.read_text()))
    ]
    assert not wrong, f"a parsed Namespace written to: {wrong}"


def _flag_modules() -> set[str]:
    """Modules that know argparse (a flag module), the fake servers' own entry points aside."""
    return {
        module
        for module, path in MODULES.items()
        if path.relative_to(SRC).as_posix() not in ARGPARSE_EXEMPT
        and any(imp == "argparse" for imp in _imports(path))
    }


def test_no_library_module_imports_a_flag_module() -> None:
    """Flag modules live in commands/; nothing below the CLI imports them, nor anything else
    of commands/ (lazily or not)."""
    flags = _flag_modules()
    wrong = [
        f"{module} imports {imp}"
        for module, path in MODULES.items()
        if _package(module) != "commands" and module != "inferlab.cli"
        for imp in _imports(path)
        if imp.startswith("inferlab.commands") or imp in flags
    ]
    assert not wrong, wrong


def test_the_argparse_checkers_find_what_they_forbid() -> None:
    code = (
        "import argparse\n"
        "def stated_floor(args: argparse.Namespace) -> None:\n"
        "    args.floor_note = 'x'\n"
        "    setattr(args, 'y', 1)\n"
        "    vars(args)['z'] = 2\n"
        "def main() -> None:\n"
        "    a = p.parse_args()\n"
        "    a.port += 1\n"
        "def fine(cfg) -> None:\n"
        "    cfg.floor_note = 'x'\n"
    )
    tree = ast.parse(code)
    assert len(list(_namespace_writes(tree))) == 4
    assert len(list(_argparse_uses(tree))) == 2  # the import, the annotated parameter


def test_the_top_level_holds_neutral_values_only() -> None:
    """Beside cli.py (the entry), every module at the top is a neutral value or plumbing
    (units, errors, JSON records, the summary schema, bounded HTTP bodies, signals): domain
    logic lives in the package whose idea it is."""
    top = {p.stem for p in SRC.glob("*.py")} - {"cli"}
    assert top <= NEUTRAL, f"move into a package: {sorted(top - NEUTRAL)}"
    top -= {"__init__"}
    assert len(top) <= TOP_LEVEL_MAX, f"{len(top)} modules at the top: {sorted(top)}"
