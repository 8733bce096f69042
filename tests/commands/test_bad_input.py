"""A user mistake gets one clear message and exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.clirun import RunCli


def test_unknown_model_suggests_close_names(run_cli: RunCli) -> None:
    code, out, err = run_cli("floor", "--model", "llama-3-8", "--hardware", "h100-sxm")
    assert code == 2
    assert "unknown model 'llama-3-8'" in err
    assert "Did you mean llama-3-8b" in err
    assert "Traceback" not in err


def test_unknown_hardware(run_cli: RunCli) -> None:
    code, _, err = run_cli("floor", "--model", "llama-3-8b", "--hardware", "h100")
    assert code == 2
    assert "unknown hardware 'h100'" in err and "h100-sxm" in err


def test_unknown_dtype(run_cli: RunCli) -> None:
    code, _, err = run_cli(
        "floor", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--weight-dtype", "fp7"
    )
    assert code == 2
    assert "unknown dtype 'fp7'" in err and "bf16" in err


def test_bad_unit_names_the_flag_and_forms(run_cli: RunCli) -> None:
    code, _, err = run_cli("floor", "--weight-bytes", "16GX", "--bandwidth", "3.35TB/s")
    assert code == 2
    assert "--weight-bytes" in err and "16GB" in err


def test_malformed_config_json(run_cli: RunCli, tmp_path: Path) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text('{"hidden_size": 4096,')
    code, _, err = run_cli("floor", "--model", str(cfg), "--hardware", "h100-sxm")
    assert code == 2
    assert "not valid JSON" in err


def test_amdahl_fractions_over_one(run_cli: RunCli) -> None:
    code, _, err = run_cli("amdahl", "0.6:3", "0.5:2")
    assert code == 2
    assert "add up to 1.1 > 1" in err


def test_nothing_to_compute(run_cli: RunCli) -> None:
    code, _, err = run_cli("floor", "--hardware", "h100-sxm")
    assert code == 2
    assert "--weight-bytes" in err


def test_missing_probe_for_this_machine(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INFERLAB_CACHE_DIR", str(tmp_path))
    code, _, err = run_cli("floor", "--weight-bytes", "1GB", "--hardware", "this-machine")
    assert code == 2
    assert "inferlab probe" in err


@pytest.mark.slow
def test_subprocess_exit_code_and_no_traceback() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "inferlab.cli", "floor", "--model", "gpt-9"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


@pytest.mark.slow
def test_floor_text_output_through_a_real_process() -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "inferlab.cli",
            "floor",
            "--model",
            "llama-3-8b",
            "--hardware",
            "h100-sxm",
            "--batch",
            "32",
            "--context",
            "1000",
            "--explain",
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "memory-bound" in r.stdout
    assert "bytes per step     = " in r.stdout  # the derivation, numbers plugged in
    assert "tok/s" in r.stdout
