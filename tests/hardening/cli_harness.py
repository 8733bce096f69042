"""Run the CLI in-process and check its promises: exit 0 or 2, one line on error, strict JSON."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass

from inferlab.cli import main
from inferlab.jsonio import loads_strict


@dataclass(frozen=True, slots=True)
class Outcome:
    code: int
    out: str
    err: str


def run(argv: list[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # --help / --version
            code = int(e.code or 0)
    return Outcome(code, out.getvalue(), err.getvalue())


def check_promises(argv: list[str], r: Outcome) -> None:
    """The contract every invocation keeps, whatever the arguments."""
    assert "Traceback" not in r.err, (argv, r.err)
    assert r.code in (0, 2), (argv, r.code, r.err)
    if r.code == 2:
        lines = [ln for ln in r.err.splitlines() if ln.strip()]
        assert len(lines) == 1, (argv, r.err)
        assert "error" in lines[0], (argv, r.err)
    if r.code == 0 and "--json" in argv and "--help" not in argv and "-h" not in argv:
        loads_strict(r.out)  # strict JSON and nothing else on stdout
