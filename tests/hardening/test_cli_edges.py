"""The CLI's own edges: internal errors, a reader that leaves, negative values, usage."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from inferlab import cli
from tests.hardening.cli_harness import run


def _boom(args: argparse.Namespace) -> int:
    raise ZeroDivisionError("float division by zero")


def test_internal_error_is_one_line_asking_for_a_report(monkeypatch: pytest.MonkeyPatch) -> None:
    real = cli.build_parser

    def patched(only: str | None = None) -> argparse.ArgumentParser:
        p = real(only)
        p.set_defaults(run=_boom)  # every verb now hits a bug
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sub in a.choices.values():
                    sub.set_defaults(run=_boom)
        return p

    monkeypatch.setattr(cli, "build_parser", patched)
    r = run(["cost", "--gpu-hour", "3", "--tokens-per-s", "100"])
    assert r.code == 1
    assert r.err.count("\n") == 1 and "Traceback" not in r.err
    assert "internal error: ZeroDivisionError" in r.err and "please report" in r.err
    monkeypatch.setenv("INFERLAB_DEBUG", "1")
    r = run(["cost", "--gpu-hour", "3", "--tokens-per-s", "100"])
    assert r.code == 1 and "Traceback" in r.err and "_boom" in r.err


@pytest.mark.slow
def test_broken_pipe_exits_quietly() -> None:
    # `inferlab hardware --json | head -c 10`: the reader leaves after 10 bytes.
    p = subprocess.run(
        f"{sys.executable} -m inferlab.cli models --json | head -c 10",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert len(p.stdout) == 10
    assert p.stderr == "", p.stderr  # no BrokenPipeError, no "Exception ignored"


@pytest.mark.slow
def test_user_error_in_a_real_process_is_one_line() -> None:
    p = subprocess.run(
        [sys.executable, "-m", "inferlab.cli", "floor", "--weight-bytes", "16GB", "--bandwidth",
         "3.35TB/s", "--batch", "nope"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "--batch" in p.stderr and "usage:" not in p.stderr


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["bench", "--url", "http://x/v1", "--rate", "-1/s"], "--rate"),
        (["floor", "--weight-bytes", "-16GB", "--bandwidth", "1TB/s"], "--weight-bytes"),
        (["floor", "--weight-bytes", "1GB", "--bandwidth", "1TB/s", "--batch", "-.5"], "--batch"),
        (["cost", "--gpu-hour", "-3", "--tokens-per-s", "1"], "--gpu-hour"),
        (["floor", "--weight-bytes", "1GB", "--bandwidth", "1TB/s", "--overhead", "-1ms"],
         "--overhead"),
    ],
)  # fmt: skip
def test_negative_numbers_are_values_refused_by_validation(argv: list[str], flag: str) -> None:
    r = run(argv)
    assert r.code == 2
    assert f"argument {flag}:" in r.err, r.err
    accepted = ("negative", "at least", "above 0", "positive", "whole number")
    assert any(w in r.err for w in accepted), r.err
    assert "expected one argument" not in r.err


def test_glue_leaves_options_alone() -> None:
    flags = {"--rate", "--batch"}
    assert cli.glue_negative_values(["--rate", "-1/s", "--json"], flags) == [
        "--rate=-1/s",
        "--json",
    ]
    assert cli.glue_negative_values(["--json", "-1"], flags) == ["--json", "-1"]
    assert cli.glue_negative_values(["--", "--rate", "-1"], flags) == ["--", "--rate", "-1"]


def test_one_line_flattens_control_characters() -> None:
    assert cli.one_line("a\nb\r\n\tc") == "a | b | \\tc"
