"""What a model costs to run: bytes resident, bytes streamed per decode step, KV and FLOPs.

Derived from a ModelSpec plus the weight and KV dtypes, or stated outright
(`ModelCost.stated(weight_bytes=16e9, ...)`), exactly as the cards state them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from inferlab.specs.dtypes import get_dtype
from inferlab.specs.model import ModelSpec


@dataclass(frozen=True, slots=True)
class ModelCost:
    name: str
    params_total: float
    # FLOPs per token = 2 x these + attention; the embedding lookup does no matmul.
    matmul_params_per_token: float
    weight_bytes_resident: float
    # Streamed by every decode step whatever the batch: attention, dense MLPs,
    # norms, routers, shared experts and the output head (a tied head reads
    # the whole embedding table).
    dense_bytes_per_step: float
    embedding_row_bytes: float  # the input lookup reads one row per sequence
    expert_bytes_each: float  # one routed expert of one MoE layer
    n_moe_layers: int
    n_experts: int
    n_experts_per_token: int
    kv_bytes_per_token: float
    kv_window_tokens: int | None  # sliding-window attention caps what is cached and read
    attn_flops_per_context_token: float
    weight_dtype: str
    kv_dtype: str
    compute_dtype: str  # which peak-FLOPS row the matmuls use
    source: str

    @classmethod
    def stated(
        cls,
        weight_bytes: float,
        kv_bytes_per_token: float = 0.0,
        params: float | None = None,
        weight_dtype: str = "bf16",
    ) -> ModelCost:
        """A model known only by the numbers a card states."""
        bpe = get_dtype(weight_dtype).bytes_per_element
        p = params if params is not None else weight_bytes / bpe
        return cls(
            name="stated",
            params_total=p,
            matmul_params_per_token=p,
            weight_bytes_resident=weight_bytes,
            dense_bytes_per_step=weight_bytes,
            embedding_row_bytes=0.0,
            expert_bytes_each=0.0,
            n_moe_layers=0,
            n_experts=0,
            n_experts_per_token=0,
            kv_bytes_per_token=kv_bytes_per_token,
            kv_window_tokens=None,
            attn_flops_per_context_token=0.0,
            weight_dtype=weight_dtype,
            kv_dtype="stated",
            compute_dtype=get_dtype(weight_dtype).compute,
            source="stated",
        )

    def with_overrides(
        self,
        weight_bytes: float | None = None,
        kv_bytes_per_token: float | None = None,
        params: float | None = None,
    ) -> ModelCost:
        """A stated number replaces the derived one it names, and only that one."""
        c = self
        if weight_bytes is not None:
            c = replace(
                c,
                weight_bytes_resident=weight_bytes,
                dense_bytes_per_step=weight_bytes,
                embedding_row_bytes=0.0,
                expert_bytes_each=0.0,
                n_moe_layers=0,
                source=c.source + "; weight bytes stated",
            )
        if kv_bytes_per_token is not None:
            c = replace(c, kv_bytes_per_token=kv_bytes_per_token, kv_window_tokens=None)
        if params is not None:
            c = replace(c, params_total=params, matmul_params_per_token=params)
        return c

    # --- per step ------------------------------------------------------
    def experts_touched(self, batch: int) -> float:
        """Expected distinct experts one MoE layer reads for `batch` tokens (uniform routing)."""
        if self.n_experts == 0:
            return 0.0
        e, k = self.n_experts, self.n_experts_per_token
        return e * (1.0 - (1.0 - k / e) ** batch)

    def weight_bytes_per_step(self, batch: int = 1) -> float:
        return (
            self.dense_bytes_per_step
            + batch * self.embedding_row_bytes
            + self.n_moe_layers * self.experts_touched(batch) * self.expert_bytes_each
        )

    def cached_tokens(self, context: int) -> int:
        return context if self.kv_window_tokens is None else min(context, self.kv_window_tokens)

    def kv_bytes(self, context: int) -> float:
        """KV bytes one sequence holds (and a decode step reads) at this context."""
        return self.kv_bytes_per_token * self.cached_tokens(context)

    def flops_per_token(self, context: int) -> float:
        return 2.0 * self.matmul_params_per_token + (
            self.attn_flops_per_context_token * self.cached_tokens(context)
        )

    def prefill_flops(self, prompt_tokens: int, context_before: int = 0) -> float:
        """Causal prefill: token i attends to context_before + i earlier tokens."""
        n = prompt_tokens
        mean_ctx = context_before + (n - 1) / 2.0 if n > 0 else 0.0
        if self.kv_window_tokens is not None:
            mean_ctx = min(mean_ctx, float(self.kv_window_tokens))
        return n * (
            2.0 * self.matmul_params_per_token + self.attn_flops_per_context_token * mean_ctx
        )


def derive_cost(spec: ModelSpec, weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> ModelCost:
    """Bytes and FLOPs of `spec` with weights in `weight_dtype` and the KV cache in `kv_dtype`."""
    kv = get_dtype(kv_dtype)
    groups = spec.param_groups()
    if spec.tensors is not None:  # GGUF: real bytes per tensor
        t = spec.tensors
        head_bytes = t.head_bytes if t.head_bytes else t.embedding_bytes
        head_params = t.head_params if t.head_params else t.embedding_params
        resident = t.embedding_bytes + t.head_bytes + t.dense_bytes + t.expert_bytes
        dense_step = t.dense_bytes + head_bytes
        row = t.embedding_bytes / max(spec.vocab_size, 1)
        expert_each = t.expert_bytes / max(spec.n_moe_layers * spec.n_experts, 1)
        dense_params, expert_params = t.dense_params, t.expert_params
        wname, compute = "gguf", "bf16"
    else:
        w = get_dtype(weight_dtype)
        b = w.bytes_per_element
        head_params = groups["head"] or groups["embedding"]
        resident = b * sum(groups.values())
        dense_step = b * (groups["dense"] + head_params)
        row = b * spec.hidden_size
        expert_each = b * groups["experts"] / max(spec.n_moe_layers * spec.n_experts, 1)
        dense_params, expert_params = groups["dense"], groups["experts"]
        wname, compute = w.name, w.compute
    active_experts = (
        expert_params * spec.n_experts_per_token / spec.n_experts if spec.n_experts else 0.0
    )
    return ModelCost(
        name=spec.name,
        params_total=spec.params_total(),
        matmul_params_per_token=dense_params + head_params + active_experts,
        weight_bytes_resident=resident,
        dense_bytes_per_step=dense_step,
        embedding_row_bytes=row,
        expert_bytes_each=expert_each,
        n_moe_layers=spec.n_moe_layers,
        n_experts=spec.n_experts,
        n_experts_per_token=spec.n_experts_per_token,
        kv_bytes_per_token=spec.kv_elements_per_token() * kv.bytes_per_element,
        kv_window_tokens=spec.sliding_window,
        attn_flops_per_context_token=spec.attention_flops_per_context_token(),
        weight_dtype=wname,
        kv_dtype=kv.name,
        compute_dtype=compute,
        source=spec.source,
    )
