"""How a model splits over tensor-parallel devices: which --tp its attention heads allow."""

from __future__ import annotations

from inferlab.errors import SpecError


def check_tp_split(name: str, n_heads: int, n_kv_heads: int, tp: int) -> None:
    """Tensor parallelism shards attention heads: refuse a --tp that cannot split them.

    Query heads must divide evenly; KV heads must divide evenly, or (when there are
    fewer KV heads than devices) each KV head is replicated on tp / n_kv_heads devices.
    """
    if tp <= 1 or n_heads <= 0:
        return
    n_kv_heads = n_kv_heads if n_kv_heads > 0 else n_heads
    kv_ok = n_kv_heads % tp == 0 or tp % n_kv_heads == 0
    if n_heads % tp == 0 and kv_ok:
        return
    fits = [
        d
        for d in range(1, min(n_heads, 4096) + 1)
        if n_heads % d == 0 and (d % n_kv_heads == 0 or n_kv_heads % d == 0)
    ]
    raise SpecError(
        f"--tp {tp}: {name}'s {n_heads} attention heads / {n_kv_heads} KV heads do not split "
        f"evenly over {tp} devices; use one of {', '.join(map(str, fits))}"
    )
