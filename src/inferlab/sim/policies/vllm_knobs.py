"""vLLM's scheduler and cache knobs, named once: inferlab's flag, the default, vLLM's own
name (flag and config field) and where a served vLLM states its value.

The defaults are vLLM 0.32's for its CPU build serving the OpenAI API (the engine of
../shared/fixtures/vllm-0.32-cpu): `EngineArgs.get_batch_defaults` (engine/arg_utils.py
2974-2983: max_num_batched_tokens 2048, max_num_seqs 128 on CPU), block_size 128 on CPU
(platforms/cpu.py 292-293), chunked prefill and prefix caching on (config/scheduler.py 134,
config/cache.py 141), long_prefill_token_threshold 0 (config/scheduler.py 79). The KV
blocks are what the server found room for (VLLM_CPU_KVCACHE_SPACE GiB on CPU, platforms/
cpu.py 324-327; GPU memory beside the weights on a GPU): the captured server stated 364 of
128 tokens for 1 GiB. vLLM reserves one of them as its null block (v1/core/block_pool.py
187), so `VllmKnobs.policy` gives the simulator num_gpu_blocks - 1.

vLLM's /metrics states only its cache config (`vllm:cache_config_info`: block_size,
num_gpu_blocks, enable_prefix_caching); the scheduler's knobs are in its startup log or
its command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inferlab.errors import ConfigError
from inferlab.sim.policies.llamacpp import Knob
from inferlab.sim.scheduler import Policy

NAME = "vllm"
CACHE_INFO = "/metrics vllm:cache_config_info"


@dataclass(frozen=True, slots=True)
class VllmKnob(Knob):
    """A knob of the vLLM policy: a Knob, with vLLM's own name and where a server states it."""

    vllm: str  # vLLM's flag (its config field)
    read_from: str  # where a running vLLM states the value
    kind: Literal["int", "bool"] = "int"  # bool: --X / --no-X, as vLLM's own flags


VLLM_KNOBS: tuple[VllmKnob, ...] = (
    VllmKnob(
        "--max-num-batched-tokens",
        "max_num_batched_tokens",
        2048,
        "vLLM: tokens a step carries, decodes and prompt chunks together (2048: the CPU build)",
        "--max-num-batched-tokens (SchedulerConfig.max_num_batched_tokens)",
        "its startup log: 'Chunked prefill is enabled with max_num_batched_tokens=N'",
    ),
    VllmKnob(
        "--max-num-seqs",
        "max_num_seqs",
        128,
        "vLLM: requests running at once (128: the CPU build)",
        "--max-num-seqs (SchedulerConfig.max_num_seqs)",
        "its command line (not published)",
    ),
    VllmKnob(
        "--block-size",
        "block_size",
        128,
        "vLLM: tokens per KV block, the prefix cache's unit (128: the CPU build)",
        "--block-size (CacheConfig.block_size)",
        f"{CACHE_INFO}{{block_size}}",
    ),
    VllmKnob(
        "--num-gpu-blocks",
        "num_gpu_blocks",
        None,
        "vLLM: KV blocks, as its /metrics states them (default: the KV capacity / block size)",
        "--num-gpu-blocks-override (CacheConfig.num_gpu_blocks)",
        f"{CACHE_INFO}{{num_gpu_blocks}}",
    ),
    VllmKnob(
        "--long-prefill-token-threshold",
        "long_prefill_token_threshold",
        0,
        "vLLM: prompt tokens of one request per step at most (0: no cap)",
        "--long-prefill-token-threshold (SchedulerConfig.long_prefill_token_threshold)",
        "its command line (not published)",
    ),
    VllmKnob(
        "--enable-chunked-prefill",
        "enable_chunked_prefill",
        1,
        "vLLM: split a prompt across steps within the token budget (on)",
        "--enable-chunked-prefill (SchedulerConfig.enable_chunked_prefill)",
        "its startup log (the line above: absent when off)",
        "bool",
    ),
    VllmKnob(
        "--enable-prefix-caching",
        "enable_prefix_caching",
        1,
        "vLLM: reuse cached KV blocks of a shared prompt prefix (on)",
        "--enable-prefix-caching (CacheConfig.enable_prefix_caching)",
        f"{CACHE_INFO}{{enable_prefix_caching}}",
        "bool",
    ),
)
# The knobs Policy has no field of its own for: they travel in Policy.knobs.
_EXTRA = ("long_prefill_token_threshold", "enable_chunked_prefill", "enable_prefix_caching")
_LEAST = {"long_prefill_token_threshold": 0, "num_gpu_blocks": 2}  # else 1 (one is null)
DEFAULT_BUDGET = 2048  # max_num_batched_tokens


@dataclass(frozen=True, slots=True)
class VllmKnobs:
    """The knobs' values; defaults as VLLM_KNOBS states them."""

    max_num_batched_tokens: int = DEFAULT_BUDGET
    max_num_seqs: int = 128
    block_size: int = 128
    num_gpu_blocks: int | None = None  # None: from the KV capacity (unlimited without one)
    long_prefill_token_threshold: int = 0
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool = True

    def __post_init__(self) -> None:
        for k in VLLM_KNOBS:
            v, least = getattr(self, k.attr), _LEAST.get(k.attr, 1)
            if k.kind == "int" and v is not None and v < least:
                raise ConfigError(f"{{{k.attr}}} must be >= {least} (got {v})")
        if self.max_num_batched_tokens < self.max_num_seqs:  # vLLM refuses it too
            raise ConfigError(  # (config/scheduler.py 328-333)
                f"{{max_num_batched_tokens}} ({self.max_num_batched_tokens}) must be >= "
                f"{{max_num_seqs}} ({self.max_num_seqs}), as vLLM requires"
            )

    @classmethod
    def given(cls, values: tuple[tuple[str, int], ...]) -> VllmKnobs:
        """The knobs given, (attr, value) with 0/1 for off/on; defaults for the rest."""
        v, d = dict(values), cls()
        return cls(
            max_num_batched_tokens=v.get("max_num_batched_tokens", d.max_num_batched_tokens),
            max_num_seqs=v.get("max_num_seqs", d.max_num_seqs),
            block_size=v.get("block_size", d.block_size),
            num_gpu_blocks=v.get("num_gpu_blocks", d.num_gpu_blocks),
            long_prefill_token_threshold=v.get(
                "long_prefill_token_threshold", d.long_prefill_token_threshold
            ),
            enable_chunked_prefill=bool(v.get("enable_chunked_prefill", 1)),
            enable_prefix_caching=bool(v.get("enable_prefix_caching", 1)),
        )

    @classmethod
    def of(cls, policy: Policy) -> VllmKnobs:
        """The knobs a Policy made by `policy` carries (defaults where it has none)."""
        tokens = policy.kv_capacity_tokens
        blocks = None if tokens is None else tokens // policy.block_tokens + 1
        common = (
            ("max_num_batched_tokens", policy.chunk_tokens or DEFAULT_BUDGET),
            ("max_num_seqs", policy.max_batch),
            ("block_size", policy.block_tokens),
        )
        return cls.given(
            (*common, *policy.knobs, *((("num_gpu_blocks", blocks),) if blocks else ()))
        )

    def policy(self, kv_capacity_tokens: int | None = None) -> Policy:
        """The simulator's Policy: the knobs, and the blocks vLLM allocates from (all but its
        null block), from num_gpu_blocks or else from `kv_capacity_tokens`."""
        blocks = self.num_gpu_blocks
        if blocks is None and kv_capacity_tokens is not None:
            blocks = max(2, kv_capacity_tokens // self.block_size)
        usable = None if blocks is None else (blocks - 1) * self.block_size
        extra = tuple((a, int(getattr(self, a))) for a in _EXTRA)
        return Policy(
            NAME,
            self.max_num_seqs,
            self.max_num_batched_tokens,
            usable,
            self.block_size,
            knobs=extra,
        )
