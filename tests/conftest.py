"""Shared fixtures: the card's H100 and Llama 3 8B stated as the cards state them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inferlab.cli import main
from inferlab.specs.cost import ModelCost
from inferlab.specs.hardware import HardwareSpec, get_hardware
from tests.clirun import RunCli, RunJson

GB = 1e9
KIB = 1024


@pytest.fixture
def h100() -> HardwareSpec:
    return get_hardware("h100-sxm")


@pytest.fixture
def llama8b_card() -> ModelCost:
    """Llama 3 8B as deck 01 states it: 16 GB BF16 weights, 128 KiB KV per token, 8B params."""
    return ModelCost.stated(weight_bytes=16 * GB, kv_bytes_per_token=128 * KIB, params=8e9)


@pytest.fixture
def run_json(capsys: pytest.CaptureFixture[str]) -> RunJson:
    """Run the CLI in-process with --json; assert it exits 0; return the parsed object."""

    def _run(*argv: str) -> dict[str, Any]:
        code = main([*argv, "--json"])
        out = capsys.readouterr().out
        assert code == 0, out
        result: dict[str, Any] = json.loads(out)
        return result

    return _run


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> RunCli:
    """Run the CLI in-process; return (exit code, stdout, stderr). argparse exits become codes."""

    def _run(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
        cap = capsys.readouterr()
        return code, cap.out, cap.err

    return _run
