"""What a vLLM server says about itself, read from vLLM 0.32 CPU's captured answers
(tests/servermetrics/fixtures/vllm, fixtures/v1-models-vllm-0.32.json, its `root` path
moved to /models): its counters, its settings (those it does not publish named as
defaults), the probe grid they give, and the refusal of a profile of another vLLM
configuration."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from inferlab.errors import InferlabError
from inferlab.profile.identity import check_profile_matches, identity_problems
from inferlab.profile.probe_plan import make_vllm_plan
from inferlab.profile.record import (
    SCHEMA_VERSION,
    Observation,
    ProfileRecord,
    ServerIdentity,
    VllmSettings,
)
from inferlab.profile.vllm_checks import window_line
from inferlab.profile.vllm_server import VllmCounters, parse_counters, settings_from

HERE = Path(__file__).parent
METRICS = HERE.parent / "servermetrics" / "fixtures" / "vllm"
MODELS = json.loads((HERE / "fixtures" / "v1-models-vllm-0.32.json").read_text())


def _counters(name: str) -> VllmCounters:
    return parse_counters((METRICS / name).read_text())


def test_the_counters_are_read_from_vllms_own_page() -> None:
    c = _counters("metrics-after-load.txt")
    assert (c.steps, c.step_tokens) == (2833, 5937)  # iteration_tokens_total count, sum
    assert (c.prefix_queries, c.prefix_hits, c.preemptions) == (1189, 0, 0)
    assert c.prefilled == 38 and c.prefill_s == pytest.approx(3.3492568779997782)
    assert (c.cache_info["block_size"], c.cache_info["num_gpu_blocks"]) == ("128", "364")
    idle = _counters("metrics-idle.txt")
    d = c.minus(idle)
    assert (d.steps, d.step_tokens, d.prefix_queries, d.prefilled) == (2821, 5920, 1184, 37)
    assert not d.alone  # 37 requests finished between the two pages
    assert VllmCounters(prefilled=1).alone and not VllmCounters(prefilled=1, preemptions=1).alone


def test_the_settings_are_what_the_server_states_and_the_rest_named_as_defaults() -> None:
    v = settings_from(MODELS, "smollm2", "0.32.0", _counters("metrics-idle.txt"))
    assert (v.version, v.block_size, v.num_gpu_blocks, v.max_model_len) == (
        "0.32.0",
        128,
        364,
        1024,
    )
    assert v.enable_prefix_caching is True
    # vLLM publishes neither: its CPU build's defaults (engine/arg_utils.py), said so
    assert (v.max_num_seqs, v.max_num_batched_tokens) == (128, 2048)
    assert v.defaulted == ("max_num_seqs", "max_num_batched_tokens")
    assert v.kv_tokens == 363 * 128  # less vLLM's null block
    assert dict(v.knob_values()) == {
        "block_size": 128,
        "num_gpu_blocks": 364,
        "enable_prefix_caching": 1,
        "max_num_seqs": 128,
        "max_num_batched_tokens": 2048,
    }
    bare = settings_from(MODELS, "other", None, None)  # no /metrics, another model's id
    assert (bare.block_size, bare.max_model_len, bare.kv_tokens) == (None, None, None)


def test_vllms_grid_has_no_slots_and_caches_whole_blocks() -> None:
    p = make_vllm_plan(1, 128, 1024, 128, 2048)
    assert p.decode_batches == (1, 2, 4, 8)  # streams at once: the batch
    assert p.split_batches == ()  # no ubatches to price
    assert p.lone_prompts == (16, 128, 384, 768)
    assert p.prefix_cached == (128, 256)  # whole 128-token blocks
    assert p.mixed_decoders == (1, 4) and p.context_batches == (1, 8)
    assert p.context_prompt + p.context_output <= 1024
    wide = make_vllm_plan(2, 128, 1024, 16, 2048)
    assert wide.decode_batches == (1, 2, 4, 8, 16, 32)
    assert wide.prefix_cached == (64, 128, 256, 320)  # 16-token blocks: as asked
    small = make_vllm_plan(1, 4, 512, 512, 2048)
    assert small.decode_batches == (1, 2, 4)  # at most max_num_seqs
    assert small.prefix_cached == ()  # no whole block fits the prefix prompt
    assert small.lone_prompts == (16, 128, 384, 464)  # max_model_len less a margin
    assert make_vllm_plan(1, 1, 1024, 128, 2048).mixed_decoders == ()  # no room beside one
    # a smaller token budget: every probe's prompt (beside 8 decoders) is one step's
    tight = make_vllm_plan(1, 128, 4096, 128, 256)
    assert tight.lone_prompts == (16, 128, 248) and max(tight.mixed_prompts) == 248


SETTINGS = settings_from(MODELS, "smollm2", "0.32.0", _counters("metrics-idle.txt"))
SERVER = ServerIdentity("smollm2", "vllm", build="0.32.0", vllm=SETTINGS)
PROFILE = ProfileRecord(
    SCHEMA_VERSION, 1.0e9, "http://127.0.0.1:18090/v1", SERVER, 1, 60.0,
    (Observation("decode", 1, 24, 0, 0, 0.025, 0.024, 0.026, 60),),
)  # fmt: skip


def test_a_profile_refuses_a_vllm_with_other_stated_settings() -> None:
    check_profile_matches(PROFILE, SERVER, force=False)
    other = replace(SERVER, vllm=replace(SETTINGS, block_size=16, num_gpu_blocks=2912))
    with pytest.raises(InferlabError) as e:
        check_profile_matches(PROFILE, other, force=False)
    msg = str(e.value)
    assert msg.startswith("profile of smollm2 (vLLM, block_size 128, 364 KV blocks): ")
    assert "the server's block_size is 16, the profile's 128" in msg
    assert "the server's num_gpu_blocks is 2912, the profile's 364" in msg
    assert msg.endswith("profile this server, or add --force")
    check_profile_matches(PROFILE, other, force=True)


def test_defaults_on_either_side_are_not_compared() -> None:
    # max_num_seqs is not published: a default stated by the profile says nothing about
    # the server's, so two defaults that differ are no mismatch
    other = replace(SERVER, vllm=replace(SETTINGS, max_num_seqs=256))
    assert identity_problems(PROFILE.server, other) == []
    stated = replace(SETTINGS, max_num_seqs=256, defaulted=("max_num_batched_tokens",))
    assert identity_problems(PROFILE.server, replace(SERVER, vllm=stated)) == []
    both = replace(PROFILE.server, vllm=replace(SETTINGS, defaulted=()))
    assert identity_problems(both, replace(SERVER, vllm=stated)) == [
        "the server's max_num_seqs is 256, the profile's 128"
    ]
    # a llama-server identity (no vLLM block) is compared as before
    assert identity_problems(PROFILE.server, ServerIdentity("smollm2", "llamacpp")) == []


def test_profile_json_keeps_the_vllm_block() -> None:
    back = ProfileRecord.from_json(json.loads(json.dumps(PROFILE.to_json())))
    assert back == PROFILE and isinstance(back.server.vllm, VllmSettings)
    assert "vllm" not in replace(SERVER, vllm=None).to_json()  # llama-server's: as before


def test_a_ttft_probe_line_says_what_vllm_counted() -> None:
    one = VllmCounters(steps=1, step_tokens=257, prefix_hits=128, prefix_queries=384,
                       prefill_s=0.3, prefilled=1)  # fmt: skip
    two = replace(one, prefilled=2)  # another client's request finished in the window
    line = window_line([("prefix", one), ("prefix", two), ("prefix", one)])
    assert line == (
        "vllm     prefix: the server's prefill 300.00 ms (request_prefill_time), 256 prompt "
        "tokens computed, 128 of 384 from its prefix cache (2 of 3 requests counted alone)"
    )
    assert "no request counted alone" in window_line([("lone", two)])
