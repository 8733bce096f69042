"""`inferlab simulate --policy vllm` from the command line: vLLM's knobs by vLLM's flag names,
the predicted preemptions and prefix hit ratio in summary.json, and the knobs' misuse."""

from __future__ import annotations

from tests.clirun import RunCli, RunJson

MODEL = ("--model", "llama-3-8b", "--hardware", "h100-sxm")


def test_a_kv_starved_vllm_preempts_and_says_so(run_json: RunJson) -> None:
    # 40 blocks of 16 tokens (39 usable, 624 tokens): 8 users of 64 + 64 tokens cannot all
    # hold their 128 tokens at once, so the last admitted are preempted as they grow
    flags = ("--policy", "vllm", "--block-size", "16", "--num-gpu-blocks", "40")
    load = "--users 8 --prompt-tokens 64 --output-tokens 64 --prefix-groups 1 --prefix-tokens 32"
    s = run_json("simulate", *MODEL, *flags, *load.split())
    sim, lv = s["simulation"], s["levels"][0]
    assert (sim["policy"], sim["block_tokens"], sim["kv_capacity_tokens"]) == ("vllm", 16, 624)
    assert (sim["max_batch"], sim["chunk_tokens"]) == (128, 2048)  # vLLM's CPU defaults
    assert sim["policy_knobs"] == {
        "long_prefill_token_threshold": 0,
        "enable_chunked_prefill": 1,
        "enable_prefix_caching": 1,
    }
    assert lv["preemptions"] > 0 and lv["requests_ok"] == 8
    # the 32-token shared prefix is 2 blocks: every user after the first finds them
    assert 0 < lv["prefix_cache_hit_ratio"] <= 7 * 32 / (8 * 64)


def test_vllm_knobs_apply_to_the_vllm_policy_only(run_cli: RunCli) -> None:
    other = "--policy continuous --max-num-seqs 4 --no-enable-prefix-caching --users 2"
    code, _, err = run_cli("simulate", *MODEL, *other.split())
    assert code == 2
    assert "--max-num-seqs, --enable-prefix-caching apply to --policy vllm only" in err
    too_many = "--policy vllm --max-num-seqs 4096 --users 2"
    code, _, err = run_cli("simulate", *MODEL, *too_many.split())
    assert code == 2
    assert "--max-num-batched-tokens (2048) must be >= --max-num-seqs (4096)" in err
    small = "--policy vllm --block-size 16 --num-gpu-blocks 3 --users 1 --prompt-tokens 64"
    code, _, err = run_cli("simulate", *MODEL, *small.split())
    assert code == 2 and "raise --num-gpu-blocks or --kv-capacity" in err
