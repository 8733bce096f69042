"""The command line: one thin verb per module in commands/; user mistakes exit 2 with one line."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

from inferlab import __version__, signals
from inferlab.errors import InferlabError

# verb module -> imported only when its verb runs, so `inferlab floor` starts instantly.
_VERBS = {
    "floor": "floor",
    "capacity": "capacity",
    "cost": "cost",
    "amdahl": "amdahl",
    "models": "catalog",
    "hardware": "catalog",
    "probe": "probe",
    "serve": "serve",
    "bench": "bench",
    "demo": "demo",
    "report": "report",
    "simulate": "simulate",
    "plan": "plan",
    "drill": "drill",
    "engine-bench": "engine_bench",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inferlab",
        description="The physics of LLM inference speed: floor, measure, compare, simulate.",
    )
    parser.add_argument("--version", action="version", version=f"inferlab {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    seen: set[str] = set()
    for verb, module in _VERBS.items():
        if module in seen or (only is not None and verb != only):
            continue
        try:
            mod = importlib.import_module(f"inferlab.commands.{module}")
        except ModuleNotFoundError as e:
            if e.name == f"inferlab.commands.{module}":
                continue  # verb not built yet
            raise
        seen.add(module)
        mod.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    verb = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(verb if verb in _VERBS else None)
    args = parser.parse_args(argv)
    try:
        with signals.handled():  # SIGTERM/SIGHUP take the KeyboardInterrupt path below
            code: int = args.run(args)
        return code
    except InferlabError as e:
        print(f"inferlab {args.verb}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            print(signals.stop_line(args.verb), file=sys.stderr)
        return signals.exit_code()  # 130 SIGINT, 143 SIGTERM, 129 SIGHUP


if __name__ == "__main__":
    sys.exit(main())
