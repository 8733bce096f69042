"""The engine-alone benchmark on the real bundled llama.cpp binaries (batch 1, 2; short outputs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.engines.llama_bench import EngineBenchConfig, load_engine_bench, run_engine_bench
from inferlab.engines.result import EngineBenchError
from tests.clirun import RunCli

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _cfg(gguf: Path) -> EngineBenchConfig:
    return EngineBenchConfig(
        gguf=gguf,
        threads=1,
        batches=(1, 2),
        prompt_tokens=16,
        output_tokens=8,
        ctx_per_slot=88,
        repetitions=2,
        timeout_s=240.0,
    )


def test_real_binaries_give_a_step_per_batch_and_a_prefill(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "eb"
    code, stdout, err = run_cli(
        "engine-bench", "--threads", "1", "--batch", "1,2", "--prompt", "16", "--output", "8",
        "--repetitions", "2", "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    eb = load_engine_bench(out)
    assert [s.batch for s in eb.steps] == [1, 2]
    for s in eb.steps:
        assert (s.prompt_tokens, s.output_tokens, s.threads) == (16, 8, 1)
        assert s.step_time_s > 0 and s.prefill_s > 0
        # The tool's own fields agree with each other: B tokens per step.
        assert s.tokens_per_s_total == pytest.approx(s.batch / s.step_time_s, rel=1e-3)
        assert s.prefill_tokens_per_s == pytest.approx(16 * s.batch / s.prefill_s, rel=1e-3)
    assert eb.ctx_size >= 2 * 88  # the context the server's slots would have
    assert eb.prefill.test == "pp16" and len(eb.prefill.samples_s) == 2
    assert eb.decode.test == "tg8" and eb.decode.per_token_s > 0
    assert eb.model_type.endswith("Q4_1") and eb.noise_rel >= 0
    assert "step ms" in stdout and "saved:" in stdout


def test_real_binary_on_a_bad_gguf_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf at all")
    with pytest.raises(EngineBenchError) as e:
        run_engine_bench(_cfg(bad))
    msg = str(e.value)
    assert msg.startswith("llama-bench failed (exit 1): llama_bench: error: failed to load model")
    assert "\n" not in msg
