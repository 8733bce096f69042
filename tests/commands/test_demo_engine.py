"""The demo's engine-alone step: measured when it can be, one line and no baseline when not."""

from __future__ import annotations

import argparse
import stat
from pathlib import Path

import pytest

from inferlab.commands.demo import demo_config
from inferlab.commands.flags.demo import add_demo_args
from inferlab.demo.config import DemoConfig
from inferlab.demo.steps import engine_alone

FIX = Path(__file__).parents[1] / "engines" / "fixtures"


def _cfg(*flags: str) -> DemoConfig:
    """The demo's config from its own flags (--quick: 32 -> 32 tokens)."""
    p = argparse.ArgumentParser()
    add_demo_args(p)
    return demo_config(p.parse_args(["--quick", *flags]))


def _gguf(tmp_path: Path) -> Path:
    g = tmp_path / "m.gguf"
    g.write_bytes(b"GGUF")
    return g


def test_missing_binary_is_one_line_and_the_demo_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("INFERLAB_LLAMA_SERVER", str(tmp_path / "llama-server"))
    eb, facts = engine_alone(_cfg("--concurrency", "1,2"), _gguf(tmp_path), 1, tmp_path)
    assert eb is None
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("    engine alone: not measured: llama-batched-bench not found in")
    assert line.endswith("the table shows floor and served only")
    assert facts["engine_alone"].startswith("not measured: llama-batched-bench not found")
    assert not (tmp_path / "engine_bench.json").exists()


@pytest.mark.slow
def test_replayed_binaries_are_measured_and_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("INFERLAB_LLAMA_SERVER", str(tmp_path / "llama-server"))
    for name, fix in (
        ("llama-batched-bench", "batched_bench_1-4_pp32_tg32_t1.jsonl"),
        ("llama-bench", "llama_bench_pp32_tg32_r2_t1.jsonl"),
    ):
        p = tmp_path / name
        p.write_text(f"#!/bin/sh\ncat {FIX / fix}\n")
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    eb, facts = engine_alone(_cfg(), _gguf(tmp_path), 1, tmp_path)
    assert eb is not None and [s.batch for s in eb.steps] == [1, 2, 4]
    assert (tmp_path / "engine_bench.json").exists()
    assert "step ms b=1 " in capsys.readouterr().out and "step ms" in facts["engine_alone"]


def test_skipped_on_request(tmp_path: Path) -> None:
    eb, facts = engine_alone(_cfg("--no-engine-bench"), _gguf(tmp_path), 1, tmp_path)
    assert eb is None and facts == {"engine_alone": "skipped (--no-engine-bench)"}
