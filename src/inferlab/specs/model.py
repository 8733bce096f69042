"""Model architecture: from a preset or a Hugging Face config.json (offline).

A `ModelSpec` is the architecture alone (layer counts, widths, MoE, MLA).
What it costs to run in a given weight / KV dtype is `specs.cost.ModelCost`.
GGUF files are read by `specs.gguf_file`; `specs.resolve` picks the reader for a name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from inferlab.errors import SpecError
from inferlab.specs.datafiles import read_catalogue

if TYPE_CHECKING:  # a preset needs no path: pathlib is imported by who reads a file
    from pathlib import Path


@dataclass(frozen=True, slots=True)
class TensorBytes:
    """Real bytes and element counts per weight group, as a GGUF file stores them."""

    embedding_bytes: float
    embedding_params: float
    head_bytes: float  # 0 when the head is tied to the embedding table
    head_params: float
    dense_bytes: float  # attention, dense MLPs, norms, routers, shared experts
    dense_params: float
    expert_bytes: float  # all routed experts of all MoE layers
    expert_params: float
    dtype_summary: str  # e.g. "Q4_1 x 211, F32 x 61"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    source: str
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool = False
    gated_mlp: bool = True
    qkv_bias: bool = False
    n_experts: int = 0
    n_experts_per_token: int = 0
    n_shared_experts: int = 0
    moe_intermediate_size: int = 0
    n_dense_layers: int = 0  # leading dense layers before the MoE layers (DeepSeek)
    q_lora_rank: int = 0
    kv_lora_rank: int = 0  # > 0 means multi-head latent attention (MLA)
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int | None = None
    max_context: int | None = None
    tensors: TensorBytes | None = field(default=None)

    # --- shape helpers -------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    def attention_params_per_layer(self) -> int:
        h, d = self.hidden_size, self.head_dim
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            q = (
                h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * self.n_heads * qk
                if self.q_lora_rank
                else h * self.n_heads * qk
            )
            kv_a = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
            kv_b = self.kv_lora_rank * self.n_heads * (self.qk_nope_head_dim + self.v_head_dim)
            o = self.n_heads * self.v_head_dim * h
            return q + kv_a + kv_b + o
        q = h * self.n_heads * d
        kv = 2 * h * self.n_kv_heads * d
        o = self.n_heads * d * h
        bias = (self.n_heads + 2 * self.n_kv_heads) * d if self.qkv_bias else 0
        return q + kv + o + bias

    def mlp_params(self, intermediate: int) -> int:
        return (3 if self.gated_mlp else 2) * self.hidden_size * intermediate

    def param_groups(self) -> dict[str, int]:
        """Parameter counts by how a decode step reads them."""
        h = self.hidden_size
        norms = self.n_layers * 2 * h + h
        dense_mlp_layers = self.n_dense_layers if self.is_moe else self.n_layers
        dense = self.n_layers * self.attention_params_per_layer() + norms
        dense += dense_mlp_layers * self.mlp_params(self.intermediate_size)
        experts = 0
        if self.is_moe:
            per_expert = self.mlp_params(self.moe_intermediate_size)
            router = h * self.n_experts
            dense += self.n_moe_layers * (router + self.n_shared_experts * per_expert)
            experts = self.n_moe_layers * self.n_experts * per_expert
        embedding = self.vocab_size * h
        head = 0 if self.tied_embeddings else self.vocab_size * h
        return {"embedding": embedding, "head": head, "dense": dense, "experts": experts}

    def params_total(self) -> int:
        if self.tensors is not None:
            t = self.tensors
            return int(t.embedding_params + t.head_params + t.dense_params + t.expert_params)
        return sum(self.param_groups().values())

    def kv_elements_per_token(self) -> int:
        """Cached elements per token over all layers: K and V, or MLA's latent + rope key."""
        if self.is_mla:
            return self.n_layers * (self.kv_lora_rank + self.qk_rope_head_dim)
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim

    def attention_flops_per_context_token(self) -> int:
        """FLOPs one new token spends per cached token: QK^T and AV, all heads, all layers."""
        if self.is_mla:  # absorbed MLA: scores over latent+rope, values over the latent
            per_head = (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
            return 2 * self.n_layers * self.n_heads * per_head
        return 4 * self.n_layers * self.n_heads * self.head_dim


# --- presets -------------------------------------------------------------
_INT_FIELDS = {
    "n_layers",
    "hidden_size",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "n_experts",
    "n_experts_per_token",
    "n_shared_experts",
    "moe_intermediate_size",
    "n_dense_layers",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "sliding_window",
    "max_context",
}


MAX_FIELD = 10**9  # no real layer count, width, vocabulary or context comes near


def _whole_in_range(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_FIELD


def _short(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


@cache  # read once a process: `inferlab models` asks for every preset in turn
def _load_presets() -> dict[str, dict[str, Any]]:
    return read_catalogue("models.toml")


def preset_names() -> list[str]:
    return list(_load_presets())


def _from_fields(name: str, source: str, f: dict[str, Any]) -> ModelSpec:
    missing = [
        k
        for k in ("n_layers", "hidden_size", "n_heads", "intermediate_size", "vocab_size")
        if not f.get(k)
    ]
    if missing:
        raise SpecError(f"{source}: missing or zero {', '.join(missing)}")
    for k, v in f.items():
        if k in _INT_FIELDS and v is not None and not _whole_in_range(v):
            raise SpecError(
                f"{source}: {k} must be a whole number from 0 to {MAX_FIELD:g}, got {_short(v)}"
            )
    f = dict(f)
    if f.get("n_dense_layers", 0) > f["n_layers"]:
        raise SpecError(f"{source}: more leading dense layers than layers")
    if f.get("n_experts_per_token", 0) > f.get("n_experts", 0):
        raise SpecError(f"{source}: more experts per token than experts")
    f.setdefault("n_kv_heads", f["n_heads"])
    f.setdefault("head_dim", f["hidden_size"] // f["n_heads"])
    return ModelSpec(name=name, source=source, **f)


def load_preset(name: str) -> ModelSpec:
    presets = _load_presets()
    key = name.strip().lower()
    if key not in presets:
        import difflib  # only to word the refusal

        close = difflib.get_close_matches(key, presets, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise SpecError(
            f"unknown model {name!r}.{hint} Known presets: {', '.join(presets)}; "
            "or pass a config.json, a model folder or a .gguf file."
        )
    fields = dict(presets[key])
    source = fields.pop("source")
    return _from_fields(key, source, fields)


# --- Hugging Face config.json -------------------------------------------
_NON_GATED = {"gpt2", "gpt_neox", "opt", "gptj", "bloom", "falcon", "phi"}


def from_hf_config(path: Path) -> ModelSpec:
    """Read a config.json (or a folder holding one) offline; no remote code runs."""
    import json  # only here: a preset or a stated model reads no JSON

    cfg_path = path / "config.json" if path.is_dir() else path
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise SpecError(f"{cfg_path}: no such file") from e
    except UnicodeDecodeError as e:
        raise SpecError(f"{cfg_path}: not a text file (byte {e.start} is not UTF-8)") from e
    except json.JSONDecodeError as e:
        raise SpecError(f"{cfg_path}: not valid JSON ({e.msg} at line {e.lineno})") from e
    except RecursionError as e:
        raise SpecError(f"{cfg_path}: not a config.json (JSON nested too deeply)") from e
    except OSError as e:
        raise SpecError(f"{cfg_path}: cannot read ({e.strerror})") from e
    if not isinstance(cfg, dict):
        raise SpecError(f"{cfg_path}: expected a JSON object")
    if "text_config" in cfg and isinstance(cfg["text_config"], dict):
        cfg = {**cfg, **cfg["text_config"]}

    def get(*keys: str, default: object = None) -> object:
        for k in keys:
            if cfg.get(k) is not None:
                return cfg[k]
        return default

    model_type = str(get("model_type", default=""))
    n_heads = get("num_attention_heads", "n_head")
    hidden = get("hidden_size", "n_embd", "d_model")
    f: dict[str, Any] = {
        "n_layers": get("num_hidden_layers", "n_layer", "num_layers"),
        "hidden_size": hidden,
        "n_heads": n_heads,
        "n_kv_heads": get("num_key_value_heads", default=n_heads),
        "intermediate_size": get(
            "intermediate_size",
            "n_inner",
            "ffn_dim",
            default=4 * hidden if isinstance(hidden, int) else None,
        ),
        "vocab_size": get("vocab_size"),
        "tied_embeddings": bool(get("tie_word_embeddings", default=model_type == "gpt2")),
        "gated_mlp": model_type not in _NON_GATED,
        "qkv_bias": bool(get("attention_bias", default=model_type.startswith("qwen2"))),
        "max_context": get("max_position_embeddings", "n_positions"),
    }
    _optional_fields(get, f)
    name = str(get("_name_or_path", default=path.name if path.is_dir() else path.parent.name))
    return _from_fields(name or "config", str(cfg_path), f)


def _optional_fields(get: Callable[..., object], f: dict[str, Any]) -> None:
    """Head size, MoE, MLA and sliding-window fields, where the config has them."""
    head_dim = get("head_dim")
    if head_dim is not None:
        f["head_dim"] = head_dim
    n_experts = get("num_local_experts", "n_routed_experts", "num_experts", default=0)
    if n_experts:
        f["n_experts"] = n_experts
        f["n_experts_per_token"] = get("num_experts_per_tok", default=2)
        f["n_shared_experts"] = get("n_shared_experts", default=0)
        f["moe_intermediate_size"] = get("moe_intermediate_size", default=f["intermediate_size"])
        f["n_dense_layers"] = get("first_k_dense_replace", default=0)
    if get("kv_lora_rank"):
        for k in (
            "q_lora_rank",
            "kv_lora_rank",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "v_head_dim",
        ):
            f[k] = get(k, default=0)
        nope, rope = f["qk_nope_head_dim"], f["qk_rope_head_dim"]
        if _whole_in_range(nope) and _whole_in_range(rope):  # else refused by _from_fields
            f["head_dim"] = nope + rope
    window = get("sliding_window")
    if window and get("use_sliding_window", default=True):
        f["sliding_window"] = window
