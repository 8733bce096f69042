"""The types of the in-process CLI fixtures `run_cli` and `run_json` (tests/conftest.py)."""

from __future__ import annotations

from typing import Any, Protocol


class RunCli(Protocol):
    """Run `inferlab ARGV` in-process: (exit code, stdout, stderr); argparse exits are codes."""

    def __call__(self, *argv: str) -> tuple[int, str, str]: ...


class RunJson(Protocol):
    """Run `inferlab ARGV --json` in-process, assert it exits 0, return the parsed object."""

    def __call__(self, *argv: str) -> dict[str, Any]: ...
