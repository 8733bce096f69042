"""Verb startup: how long the physics verbs and `inferlab --help` take, start to exit.

Each command is a fresh process, timed from spawn to exit (imports, parsing, the
answer, interpreter teardown). The commands are run interleaved, one of each per
round (verb A, verb B, ..., `python -c pass`, then again), so a machine that slows
down for a minute slows every row alike instead of one. Bare Python's row is the
floor under every other: it is what starting an interpreter costs here.

    uv run python benchmarks/verb_startup.py [--runs 20] [--target-ms 50]

Prints one row per command: the wall-clock median, its p10-p90 spread, the median CPU
time (user + system: on a machine shared with other work the wall clock also counts
waiting for a core, the CPU time does not), the target and whether the wall-clock
median meets it. The target is for the verbs, not for bare Python.

Bytecode: the children get this shell's environment unchanged. Under
PYTHONDONTWRITEBYTECODE=1 (set on the shared machines) Python never writes .pyc files
at import, so inferlab's start-up rests on the bytecode its install compiled
(hatch_build.py, for the editable install `uv sync` makes); the header says how many
of inferlab's modules have it. Without it, every start compiles ~2,500 lines again
(~20 ms more here).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# The console script uv installs beside the interpreter; `python -c` when there is none.
_SCRIPT = Path(sys.executable).with_name("inferlab")
_ENTRY = (
    [sys.executable, str(_SCRIPT)]
    if _SCRIPT.exists()
    else [sys.executable, "-c", "import sys; from inferlab.cli import main; sys.exit(main())"]
)
_PRESETS = ["--model", "llama-3-8b", "--hardware", "h100-sxm"]
COMMANDS: dict[str, list[str]] = {
    "inferlab --help": ["--help"],
    "floor": ["floor", *_PRESETS],
    "capacity": ["capacity", *_PRESETS, "--context", "8192"],
    "cost": ["cost", "--gpu-hour", "3", "--tokens-per-s", "200"],
    "amdahl": ["amdahl", "0.3:3", "0.5:2"],
    "models": ["models"],
    "hardware": ["hardware"],
}
BARE = "python -c pass"


def compiled_share() -> str:
    """How many of inferlab's modules have bytecode that matches their source."""
    import importlib.util

    import inferlab

    sources = list(Path(inferlab.__file__).parent.rglob("*.py"))
    fresh = sum(_fresh_bytecode(src, importlib.util.cache_from_source(str(src))) for src in sources)
    return f"{fresh} of {len(sources)} inferlab modules have fresh bytecode"


def _fresh_bytecode(source: Path, cached: str) -> bool:
    """Python's own test: the .pyc header's source mtime and size match the file's."""
    try:
        header = Path(cached).read_bytes()[8:16]
    except OSError:
        return False
    st = source.stat()
    return header == (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (
        st.st_size & 0xFFFFFFFF
    ).to_bytes(4, "little")


@dataclass(frozen=True, slots=True)
class Sample:
    """One start of one command: wall-clock from spawn to exit, and the CPU it used."""

    wall_ms: float
    cpu_ms: float  # user + system of the child: what the machine's other load cannot inflate


def _once(argv: list[str], env: dict[str, str]) -> Sample:
    """One start; a command that fails is a broken benchmark, not a time."""
    start = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    err = p.stderr.read().decode() if p.stderr else ""
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped above: Popen must not wait again
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {p.returncode}: {err[-300:]}")
    return Sample(wall * 1e3, (usage.ru_utime + usage.ru_stime) * 1e3)


def measure(runs: int, env: dict[str, str]) -> dict[str, list[Sample]]:
    """`runs` samples per command, one of each command per round."""
    argvs = {name: [*_ENTRY, *args] for name, args in COMMANDS.items()}
    argvs[BARE] = [sys.executable, "-c", "pass"]
    for argv in argvs.values():  # a warm-up round: page cache and .pyc files, not timed
        _once(argv, env)
    samples: dict[str, list[Sample]] = {name: [] for name in argvs}
    for _ in range(runs):
        for name, argv in argvs.items():
            samples[name].append(_once(argv, env))
    return samples


def _decile(values: list[float], k: int) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[k - 1]


def table(samples: dict[str, list[Sample]], target_ms: float) -> list[str]:
    """Wall-clock median (judged against the target), its p10-p90, and the CPU median."""
    lines = [f"{'command':<18}{'median':>9}{'p10-p90':>14}{'CPU':>9}{'target':>8}  verdict"]
    for name, runs in samples.items():
        wall = [s.wall_ms for s in runs]
        spread = f"{_decile(wall, 1):.0f}-{_decile(wall, 9):.0f} ms"
        median, cpu = statistics.median(wall), statistics.median(s.cpu_ms for s in runs)
        if name == BARE:
            verdict, target = "(the interpreter alone)", "-"
        else:
            verdict, target = ("met" if median <= target_ms else "not met"), f"{target_ms:g} ms"
        lines.append(f"{name:<18}{median:>6.1f} ms{spread:>14}{cpu:>6.1f} ms{target:>8}  {verdict}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="rounds, one of each command (20)")
    ap.add_argument("--target-ms", type=float, default=50.0, help="the verbs' target (50)")
    args = ap.parse_args()
    if args.runs < 2:
        raise SystemExit("--runs must be at least 2 (a spread needs two)")
    env = dict(os.environ)
    print(f"{args.runs} interleaved runs each, environment as is; entry: {' '.join(_ENTRY[:2])}")
    print(f"PYTHONDONTWRITEBYTECODE={env.get('PYTHONDONTWRITEBYTECODE', '(unset)')}; ", end="")
    print(compiled_share())
    print("\n".join(table(measure(args.runs, env), args.target_ms)))


if __name__ == "__main__":
    main()
