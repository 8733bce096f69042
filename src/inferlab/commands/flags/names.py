"""Config fields as the flags that set them: the library names a field in braces
(errors.ConfigError: "{requests_per_user} must be >= 1"), and the CLI words it as the flag
the user typed ("--requests-per-user must be >= 1"). One table for every verb: a field has
one flag wherever it is set."""

from __future__ import annotations

from inferlab.errors import ConfigError

FLAG_NAMES: dict[str, str] = {
    # the load (load/, sim/simulate_level.py)
    "concurrency": "--concurrency",
    "rate": "--rate",
    "duration_s": "--duration",
    "requests_per_level": "--requests-per-level",
    "users": "--users",
    "requests_per_user": "--requests-per-user",
    "trace": "--trace",
    "injected": "--inject-prompt",
    "prompt_tokens": "--prompt-tokens",
    "output_tokens": "--output-tokens",
    "burstiness": "--burstiness",
    "trace_window": "--trace-window",
    "trace_speed": "--trace-speed",
    "length_scale": "--length-scale",
    "output_scale": "--output-scale",
    "trace_block_tokens": "--trace-block-tokens",
    "prompts": "--prompts",
    "turns": "--turns",
    "think_time_s": "--think-time",
    # the SLO and the search
    "slo": "--slo",
    "min_attainment": "--min-attainment",
    "search": "--find-max-load",
    "search_max_levels": "--search-max-levels",
    # the simulation's size
    "max_requests": "--max-requests",
    "max_steps": "--max-steps",
    "sim_duration_s": "--sim-duration",
    # the step time (sim/steptime/)
    "efficiency": "--efficiency",
    "overhead_s": "--overhead",
    "serving_overhead_s": "--serving-overhead",
    "calibrate": "--calibrate",
    "kv_capacity_bytes": "--kv-capacity",
    "tp": "--tp",
    "memory_bytes": "--memory",
    # the scheduler (sim/policies/)
    "policy": "--policy",
    "ctx_size": "--ctx-size",
    "parallel": "--parallel",
    "max_batch": "--max-batch",
    "block_tokens": "--block-tokens",
    "chunked_prefill": "--chunked-prefill",
    # vLLM's knobs (sim/policies/vllm_knobs.py), as vLLM names its own flags
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "max_num_seqs": "--max-num-seqs",
    "block_size": "--block-size",
    "num_gpu_blocks": "--num-gpu-blocks",
    "long_prefill_token_threshold": "--long-prefill-token-threshold",
    "enable_chunked_prefill": "--enable-chunked-prefill",
    "enable_prefix_caching": "--enable-prefix-caching",
    # the run folder
    "out_dir": "--out",
    "overwrite": "--overwrite",
    "append_run": "--append-run",
    # the price
    "gpu_hour": "--gpu-hour",
    # past what was measured (an engine baseline's or a profile's batches)
    "force": "--force",
}


def said(e: Exception) -> str:
    """The error as the user reads it: a ConfigError's fields written as their flags."""
    return e.worded(FLAG_NAMES) if isinstance(e, ConfigError) else str(e)
