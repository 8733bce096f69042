"""Each preset's parameter count and KV bytes per token, checked by hand against its config."""

from __future__ import annotations

import pytest

from inferlab.specs.cost import derive_cost
from inferlab.specs.model import load_preset, preset_names

# (preset, published parameter count, KV bytes/token in bf16 computed by hand)
HAND = [
    ("llama-2-7b", 6.738e9, 2 * 32 * 32 * 128 * 2),
    ("llama-2-13b", 13.016e9, 2 * 40 * 40 * 128 * 2),
    ("llama-2-70b", 68.98e9, 2 * 80 * 8 * 128 * 2),
    ("llama-3-8b", 8.030e9, 2 * 32 * 8 * 128 * 2),  # 128 KiB
    ("llama-3-70b", 70.55e9, 2 * 80 * 8 * 128 * 2),
    ("llama-3.1-405b", 405.85e9, 2 * 126 * 8 * 128 * 2),
    ("mistral-7b", 7.242e9, 2 * 32 * 8 * 128 * 2),
    ("mixtral-8x7b", 46.70e9, 2 * 32 * 8 * 128 * 2),
    ("qwen2.5-7b", 7.616e9, 2 * 28 * 4 * 128 * 2),
    ("qwen2.5-72b", 72.71e9, 2 * 80 * 8 * 128 * 2),
    ("deepseek-v3", 671.0e9, 61 * (512 + 64) * 2),  # MLA: latent + rope key, no factor 2
    ("smollm2-135m", 134.5e6, 2 * 30 * 3 * 64 * 2),
]


@pytest.mark.parametrize(("name", "params", "kv"), HAND)
def test_params_and_kv_per_token(name: str, params: float, kv: int) -> None:
    spec = load_preset(name)
    cost = derive_cost(spec, "bf16", "bf16")
    assert cost.params_total == pytest.approx(params, rel=0.003)
    assert cost.kv_bytes_per_token == kv


def test_every_preset_is_checked() -> None:
    assert {n for n, _, _ in HAND} == set(preset_names())


def test_llama3_8b_kv_is_128_kib_and_fp8_halves_it() -> None:
    spec = load_preset("llama-3-8b")
    assert derive_cost(spec, "bf16", "bf16").kv_bytes_per_token == 128 * 1024
    assert derive_cost(spec, "bf16", "fp8").kv_bytes_per_token == 64 * 1024


def test_embedding_lookup_reads_rows_tied_head_reads_table() -> None:
    untied = derive_cost(load_preset("llama-3-8b"))
    # Untied: the 128256 x 4096 input table is resident but a step reads only B rows of it.
    table = 128256 * 4096 * 2
    assert untied.weight_bytes_resident - untied.weight_bytes_per_step(1) == pytest.approx(
        table - 4096 * 2
    )
    tied = derive_cost(load_preset("smollm2-135m"))
    # Tied: the head reads the whole table, so per-step bytes ~= resident bytes.
    assert tied.weight_bytes_per_step(1) == pytest.approx(tied.weight_bytes_resident, rel=1e-4)


def test_moe_reads_only_touched_experts() -> None:
    mixtral = derive_cost(load_preset("mixtral-8x7b"))
    # Top-2 of 8: batch 1 touches 2 experts per layer; a large batch touches all 8.
    assert mixtral.experts_touched(1) == pytest.approx(2.0)
    assert mixtral.experts_touched(64) == pytest.approx(8.0, rel=1e-3)
    assert mixtral.weight_bytes_per_step(1) < 0.35 * mixtral.weight_bytes_resident
    # Active parameters: ~12.9B of 46.7B.
    assert mixtral.matmul_params_per_token == pytest.approx(12.9e9, rel=0.02)
    ds = derive_cost(load_preset("deepseek-v3"))
    assert ds.matmul_params_per_token == pytest.approx(37e9, rel=0.03)  # "37B activated"


def test_int4_carries_group_scale_overhead() -> None:
    c = derive_cost(load_preset("llama-3-8b"), "int4")
    assert c.weight_bytes_resident == pytest.approx(8.03e9 * 4.125 / 8, rel=0.003)


def test_sliding_window_caps_kv() -> None:
    c = derive_cost(load_preset("mistral-7b"))
    assert c.kv_bytes(32768) == c.kv_bytes(4096)
