"""A GGUF file's architecture (metadata) and real weight bytes (tensor table).

Bytes are counted per tensor from its stored quant type, so a Q4_1 model with
a Q8_0 embedding table and F32 norms is counted exactly as it sits in memory.
The header is read by `gguf_header` (milliseconds; gguf.GGUFReader takes seconds).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from inferlab.errors import SpecError
from inferlab.specs.gguf_header import GGUFHeader, GGUFHeaderError, TensorInfo, read_header
from inferlab.specs.model import ModelSpec, TensorBytes, _from_fields


def _field(header: GGUFHeader, key: str, default: Any = None) -> Any:
    value = header.fields.get(key)
    return default if value is None else value


def _group(name: str) -> str:
    if name == "token_embd.weight":
        return "embedding"
    if name == "output.weight":
        return "head"
    if "_exps." in name:  # routed experts: blk.N.ffn_{gate,up,down}_exps.weight
        return "experts"
    return "dense"


def tensor_bytes(tensors: tuple[TensorInfo, ...]) -> TensorBytes:
    nbytes: Counter[str] = Counter()
    nparams: Counter[str] = Counter()
    types: Counter[str] = Counter()
    for t in tensors:
        g = _group(t.name)
        nbytes[g] += t.n_bytes
        nparams[g] += t.n_elements
        types[t.type_name] += 1
    return TensorBytes(
        embedding_bytes=nbytes["embedding"],
        embedding_params=nparams["embedding"],
        head_bytes=nbytes["head"],
        head_params=nparams["head"],
        dense_bytes=nbytes["dense"],
        dense_params=nparams["dense"],
        expert_bytes=nbytes["experts"],
        expert_params=nparams["experts"],
        dtype_summary=", ".join(f"{k} x {v}" for k, v in types.most_common()),
    )


def from_gguf(path: Path) -> ModelSpec:
    if not path.is_file():
        raise SpecError(f"{path}: no such GGUF file")
    try:
        reader = read_header(path)
    except (GGUFHeaderError, OSError) as e:
        raise SpecError(f"{path}: not a readable GGUF file ({e})") from e
    arch = _field(reader, "general.architecture")
    if not arch:
        raise SpecError(f"{path}: GGUF metadata has no general.architecture")

    def a(key: str, default: Any = None) -> Any:
        return _field(reader, f"{arch}.{key}", default)

    n_heads = a("attention.head_count")
    hidden = a("embedding_length")
    n_layers = a("block_count")
    if not (n_heads and hidden and n_layers):
        raise SpecError(f"{path}: GGUF metadata lacks block_count/embedding_length/head_count")
    tb = tensor_bytes(reader.tensors)
    vocab = a("vocab_size") or _div(int(tb.embedding_params), hidden)
    n_kv = a("attention.head_count_kv", n_heads)
    if isinstance(n_kv, list):  # per-layer head counts in some architectures
        n_kv = max(n_kv, default=None)
    name = str(_field(reader, "general.name", path.stem))
    kv_rank = a("attention.kv_lora_rank", 0)
    f: dict[str, Any] = {
        "n_layers": n_layers,
        "hidden_size": hidden,
        "n_heads": n_heads,
        "n_kv_heads": n_kv,
        "head_dim": a("attention.key_length", _div(hidden, n_heads)),
        "intermediate_size": a("feed_forward_length", _mul(4, hidden)),
        "vocab_size": vocab,
        "tied_embeddings": tb.head_bytes == 0,
        "n_experts": a("expert_count", 0),
        "n_experts_per_token": a("expert_used_count", 0),
        "n_shared_experts": a("expert_shared_count", 0),
        "moe_intermediate_size": a("expert_feed_forward_length", 0),
        "n_dense_layers": a("leading_dense_block_count", 0),
        "kv_lora_rank": kv_rank,
        "qk_rope_head_dim": a("rope.dimension_count", 0) if kv_rank else 0,
        "sliding_window": a("attention.sliding_window"),
        "max_context": a("context_length"),
        "tensors": tb,
    }
    # Checked like a config.json: a negative block count or a string width is refused here.
    return _from_fields(name, f"GGUF {path.name} ({tb.dtype_summary})", f)


def _div(a: Any, b: Any) -> Any:
    return a // b if isinstance(a, int) and isinstance(b, int) and b > 0 else None


def _mul(k: int, a: Any) -> Any:
    return k * a if isinstance(a, int) else None
