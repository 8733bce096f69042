"""How a verb answers: `--json` (one strict object) or a two-column table, with `--explain`.

Light on purpose (no specs, no JSON module until `--json` is asked), so a verb that
only prints, as `cost` and `amdahl`, starts with little more than the interpreter.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping


def add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object (keys carry units)")
    p.add_argument(
        "--explain", action="store_true", help="print the derivation, numbers plugged in"
    )


def emit(
    args: argparse.Namespace, data: Mapping[str, object], text: list[str], explain: list[str]
) -> None:
    """--json prints the object; otherwise the text, and the derivation with --explain."""
    if args.json:
        from inferlab.jsonio import dumps  # only when asked: json and pathlib cost a start

        sys.stdout.write(dumps(data) + "\n")  # strict: a non-finite number prints as null
        return
    if args.explain and explain:
        print("\n".join(explain))
        print()
    print("\n".join(text))


def table(rows: list[tuple[str, str]]) -> list[str]:
    width = max((len(k) for k, _ in rows), default=0)
    return [f"{k:<{width}}  {v}" for k, v in rows]
