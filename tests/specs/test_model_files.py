"""Model specs from a Hugging Face config.json and from the real SmolLM2 GGUF file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferlab.engines.bundled import smollm2_gguf_path
from inferlab.errors import SpecError
from inferlab.specs.cost import derive_cost
from inferlab.specs.model import from_hf_config, load_preset
from inferlab.specs.resolve import resolve_model

LLAMA3_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}


def test_config_json_matches_preset(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(LLAMA3_8B_CONFIG))
    spec = from_hf_config(tmp_path)  # a model folder
    preset = load_preset("llama-3-8b")
    assert spec.params_total() == preset.params_total()
    assert derive_cost(spec).kv_bytes_per_token == 128 * 1024


def test_config_json_head_dim_is_honoured(tmp_path: Path) -> None:
    # Gemma-style: head_dim 256 although hidden / heads = 2048 / 8 = 256... make it differ.
    cfg = {
        **LLAMA3_8B_CONFIG,
        "hidden_size": 3072,
        "num_attention_heads": 16,
        "head_dim": 256,
        "num_key_value_heads": 16,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    spec = resolve_model(str(path))
    assert spec.head_dim == 256  # not 3072 / 16 = 192
    assert derive_cost(spec).kv_bytes_per_token == 2 * 32 * 16 * 256 * 2


def test_config_json_moe_and_mla(tmp_path: Path) -> None:
    cfg = {
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "num_attention_heads": 128,
        "num_hidden_layers": 61,
        "num_key_value_heads": 128,
        "vocab_size": 129280,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "n_shared_experts": 1,
        "moe_intermediate_size": 2048,
        "first_k_dense_replace": 3,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    spec = from_hf_config(tmp_path / "config.json")
    assert spec.params_total() == load_preset("deepseek-v3").params_total()
    assert derive_cost(spec).kv_bytes_per_token == 61 * 576 * 2


def test_malformed_config_json(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(SpecError, match="not valid JSON"):
        from_hf_config(bad)
    bad.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096}))
    with pytest.raises(SpecError, match="missing or zero n_layers"):
        from_hf_config(bad)


@pytest.mark.slow  # gguf.GGUFReader reads the bundled GGUF's tokenizer for seconds
def test_smollm2_gguf_bytes_from_the_real_file() -> None:
    from gguf import GGUFReader

    path = smollm2_gguf_path()
    reader = GGUFReader(str(path))
    summed = sum(int(t.n_bytes) for t in reader.tensors)
    spec = resolve_model(str(path))
    cost = derive_cost(spec)
    assert cost.weight_bytes_resident == summed
    # Architecture from metadata matches the published config.
    preset = load_preset("smollm2-135m")
    for field in (
        "n_layers",
        "hidden_size",
        "n_heads",
        "n_kv_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
    ):
        assert getattr(spec, field) == getattr(preset, field), field
    assert spec.tied_embeddings
    assert spec.params_total() == pytest.approx(preset.params_total(), rel=1e-6)
    # Q4_1 blocks are 20 bytes per 32 weights; the Q8_0 embedding table is 34 per 32.
    embd = next(t for t in reader.tensors if t.name == "token_embd.weight")
    assert embd.tensor_type.name == "Q8_0"
    assert int(embd.n_bytes) == int(embd.n_elements) // 32 * 34
    # The tied head reads the whole table each step: per-step bytes ~= file bytes.
    assert cost.weight_bytes_per_step(1) == pytest.approx(summed, rel=1e-3)
    assert 90e6 < summed < 100e6
