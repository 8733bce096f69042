"""The command line: one thin verb per module in commands/; user mistakes exit 2 with one line.

Exit codes: 0 done; 1 an internal error (a bug: one line asking for a report,
the traceback with INFERLAB_DEBUG=1) or a --strict failure; 2 a user mistake
(one line naming the flag or file and what is accepted); 130 Ctrl-C (143 SIGTERM,
129 SIGHUP); 141 the reader of stdout went away (`inferlab hardware --json | head`),
quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
from typing import NoReturn

from inferlab import __version__, signals
from inferlab.errors import InferlabError

# verb -> (its module in commands/, its one line in `inferlab --help`). The module is
# imported only when its verb runs (or its own --help is asked), so `inferlab floor` and
# `inferlab --help` start instantly; tests/commands/test_verb_imports.py checks each line
# here against the one its module gives argparse.
VERBS: dict[str, tuple[str, str]] = {
    "floor": ("floor", "the decode floor: step time, tok/s, bound, prefill, MBU"),
    "capacity": ("capacity", "max batch that fits: weights + KV + reserve <= memory"),
    "cost": ("cost", "$ per million tokens at one or two operating points"),
    "amdahl": ("amdahl", "overall speedup of FRACTION:SPEEDUP optimisations"),
    "models": ("catalog", "list model presets with parameters, bytes and sources"),
    "hardware": ("catalog", "list hardware with bandwidth, FLOPS, memory and sources"),
    "probe": ("probe", "measure this machine's memory bandwidth and FLOPS"),
    "serve": ("serve", "run the embedded llama.cpp server (SmolLM2-135M Q4_1)"),
    "bench": ("bench", "benchmark an OpenAI-compatible server honestly"),
    "demo": ("demo", "probe, serve SmolLM2 locally, sweep, report (a few minutes)"),
    "report": ("report", "re-render a run's report, or another tool's results against the floor"),
    "simulate": ("simulate", "simulate a serving scheduler under a load"),
    "plan": ("plan", "fleet size for a request rate under an SLO, priced"),
    "drill": ("drill", "flash cards with fresh numbers, graded, with a history"),
    "scrape": ("scrape", "read a server's /metrics once, normalised across engines"),
    "engine-bench": ("engine_bench", "llama.cpp's own step time per batch and prefill (no server)"),
    "profile": ("profile", "profile a served engine's step once (for predictions)"),
    "watch": ("watch", "live MBU, MFU, tok/s, batch, KV, TTFT/TPOT of a server"),
}


# A value that starts with "-" but is a number to a human: -1, -1/s, -.5, -1e3, -inf, -16GB.
_NEGATIVE_VALUE = re.compile(r"-(\d|\.\d|inf|nan)", re.IGNORECASE)


class UsageError(Exception):
    """An argparse complaint, carried out of the parser as one line (no usage block)."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


def _columns() -> int:
    """The terminal's width as shutil.get_terminal_size() reads it (COLUMNS, else the
    terminal, else 80), without importing shutil: its bz2 and lzma cost every start."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    try:
        return os.get_terminal_size(stdout.fileno()).columns or 80 if stdout else 80
    except (ValueError, OSError):  # not a terminal, or no file behind stdout
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's own layout, at the width argparse itself would choose."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line naming the flag, not the whole usage block, and
    `-1/s`, `-0.5:2`, `-inf` are values (argparse only knows `-1` and `-1.5`)."""

    def _get_formatter(self) -> argparse.HelpFormatter:
        """argparse makes a formatter for every flag it adds (to check it): ours needs no shutil."""
        if self.formatter_class is argparse.HelpFormatter:
            return _Formatter(self.prog)
        return super()._get_formatter()

    @property
    def _negative_number_matcher(self) -> re.Pattern[str]:
        return _NEGATIVE_VALUE

    @_negative_number_matcher.setter
    def _negative_number_matcher(self, _: re.Pattern[str]) -> None:
        """argparse sets its own (plain numbers only) as it starts: ours stays."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser. None: every verb's own (all their modules imported). A verb: its own
    alone (with its module's other verbs), nothing else imported. Anything else, as "":
    every verb listed by name and help, for `inferlab --help`, no verb module imported."""
    parser = _Parser(
        prog="inferlab",
        description="The physics of LLM inference speed: floor, measure, compare, simulate.",
    )
    parser.add_argument("--version", action="version", version=f"inferlab {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    wanted = VERBS[only][0] if only in VERBS else None
    built: set[str] = set()
    for verb, (module, help_line) in VERBS.items():
        if only is not None and wanted is None:
            sub.add_parser(verb, help=help_line)  # listed; its flags unknown until it runs
        elif module not in built and (wanted is None or module == wanted):
            built.add(module)
            importlib.import_module(f"inferlab.commands.{module}").add_parser(sub)
    return parser


def _value_flags(parser: argparse.ArgumentParser, verb: str | None) -> set[str]:
    """Option strings of `verb` that take a value (so `--rate -1/s` can be glued)."""
    flags: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and verb in action.choices:
            sub = action.choices[verb]
            for a in sub._actions:
                if a.nargs != 0 and a.option_strings:
                    flags.update(a.option_strings)
    return flags


def glue_negative_values(argv: list[str], value_flags: set[str]) -> list[str]:
    """`--rate -1/s` -> `--rate=-1/s`: argparse would read -1/s as an unknown option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out.extend(argv[i:])
            break
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if a in value_flags and nxt is not None and _NEGATIVE_VALUE.match(nxt):
            out.append(f"{a}={nxt}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _verb_of(argv: list[str]) -> str | None:
    """The first word; None when there is none or the top level's own --help comes first
    (`inferlab -h floor` lists every verb)."""
    for a in argv:
        if a in ("-h", "--help"):
            return None
        if not a.startswith("-"):
            return a
    return None


def _parse(argv: list[str]) -> argparse.Namespace | int:
    verb = _verb_of(argv)
    parser = build_parser(verb if verb in VERBS else "")
    if not argv:  # no arguments at all: the usage is the answer
        parser.print_help(sys.stderr)
        return 2
    argv = glue_negative_values(argv, _value_flags(parser, verb))
    hint = f"inferlab {verb} --help" if verb in VERBS else "inferlab --help"
    try:
        args, extra = parser.parse_known_args(argv)
    except UsageError as e:
        print(one_line(f"{e.prog}: error: {e} (see {hint})"), file=sys.stderr)
        return 2
    if extra:
        unknown = " ".join(repr(a) if not a.isprintable() or not a else a for a in extra)
        print(
            one_line(
                f"inferlab {args.verb}: error: unrecognized arguments: {unknown} (see {hint})"
            ),
            file=sys.stderr,
        )
        return 2
    return args


def one_line(message: str) -> str:
    """An error is one line: line breaks become ' | ', other control characters escapes."""
    message = " | ".join(part for part in message.splitlines() if part.strip())
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


def _broken_pipe() -> int:
    """The reader left (`| head`): stop quietly, and keep Python's exit flush from complaining."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (tests capture it): nothing to silence
    return 141


def _internal_error(verb: str, e: BaseException) -> int:
    if os.environ.get("INFERLAB_DEBUG"):
        import traceback  # only for a bug, asked for: not on every start

        traceback.print_exception(e, file=sys.stderr)
    first = str(e).splitlines()[0] if str(e) else ""
    print(
        one_line(
            f"inferlab {verb}: internal error: {type(e).__name__}"
            + (f": {first}" if first else "")
            + " -- this is a bug, please report it (INFERLAB_DEBUG=1 shows the traceback)"
        ),
        file=sys.stderr,
    )
    return 1


def _in_flags(e: InferlabError) -> str:
    """The error as the user reads it: a config field the library names is written as the
    flag that sets it (errors.ConfigError, commands/flags/names.py)."""
    from inferlab.commands.flags.names import said  # only once an error is to be said

    return said(e)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    verb = "?"
    try:
        args = _parse(argv)
        if isinstance(args, int):
            return args
        verb = args.verb
        with signals.handled():  # SIGTERM/SIGHUP take the KeyboardInterrupt path below
            code: int = args.run(args)
        sys.stdout.flush()
        return code
    except InferlabError as e:
        print(one_line(f"inferlab {verb}: error: {_in_flags(e)}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
            print(signals.stop_line(verb), file=sys.stderr)
        return signals.exit_code()  # 130 SIGINT, 143 SIGTERM, 129 SIGHUP
    except BrokenPipeError:
        return _broken_pipe()
    except Exception as e:  # a bug: one line and a request to report it, never a traceback
        return _internal_error(verb, e)


if __name__ == "__main__":
    sys.exit(main())
