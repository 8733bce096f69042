"""`inferlab profile` against a fake vLLM whose step costs are scripted (slow: subprocesses;
testing/fake_vllm.py): the engine is detected, not named (/v1/models `owned_by: vllm`; behind
a proxy that renames it, its /metrics), its settings recorded, every probe run without slots,
each TTFT probe's step and cached tokens read from vLLM's counters, and the fitted step
within a stated tolerance of the scripted one; a profile.json then refuses a vLLM of
another block size.

Tolerance: the fake's steps run on the real clock (an asyncio sleep, never early), and on
this 2-core machine shared by other test runs its steps came out 0-15 % long, its TTFTs
more (loopback HTTP, the client). So the fitted step is held to -15 %..+35 % of the
scripted one at the shapes the probes measured and at one beyond them, and the request's
own cost to at least 90 % of the scripted (HTTP only adds).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from inferlab.errors import InferlabError
from inferlab.profile.fit import fit_profile
from inferlab.profile.identity import check_profile_matches
from inferlab.profile.record import ServerIdentity, load_profile
from inferlab.profile.run_profile import ProfileConfig, connected
from inferlab.testing.fake_steps import StepScript
from inferlab.testing.fake_vllm import VllmScript
from tests.clirun import RunCli
from tests.profile.vllmfake import running_fake_vllm

pytestmark = pytest.mark.slow

COSTS = StepScript(per_prompt_token_s=100e-6, per_kilo_pair_s=0.3e-3)
SCRIPT = VllmScript(COSTS)
LOW, HIGH = 0.85, 1.35  # fitted / scripted step


def _identity(url: str) -> ServerIdentity:
    async def read() -> ServerIdentity:
        async with connected(ProfileConfig(url)) as (_, ident):
            return ident

    return asyncio.run(read())


def test_a_vllm_is_profiled_as_vllm_and_its_scripted_step_recovered(
    tmp_path: Path, run_cli: RunCli
) -> None:
    with running_fake_vllm(SCRIPT) as url:
        code, out, err = run_cli("profile", "--url", url, "--out", str(tmp_path), "--json")
    assert code == 0, err
    profile = load_profile(tmp_path)
    s = profile.server
    assert s.kind == "vllm" and s.build == "0.32.0" and s.parallel is None
    v = s.vllm
    assert v is not None
    assert (v.block_size, v.num_gpu_blocks, v.max_model_len) == (128, 364, 1024)
    assert v.defaulted == ("max_num_seqs", "max_num_batched_tokens")
    assert "max_num_seqs 128 (not published: vLLM 0.32 CPU's default)" in err
    obs = profile.observations
    assert {o.probe for o in obs} == {"lone", "prefix", "decode", "context", "mixed"}
    assert all(o.ubatch_count == 1 for o in obs)  # a vLLM step is one pass
    assert sorted(o.decoders for o in obs if o.probe == "decode") == [1, 2, 4, 8]
    # the cached tokens are what vLLM's prefix_cache_hits counted: whole 128-token blocks
    assert [o.cached_tokens for o in obs if o.probe == "prefix"] == [128, 256]
    assert all(o.cached_tokens == 0 for o in obs if o.probe == "lone")  # salted: unique
    # each TTFT probe's step is vLLM's own request_prefill_time: the request cost apart
    ttft = [o for o in obs if o.probe in ("lone", "prefix")]
    assert all(o.server_step_s and 0 < o.server_step_s < o.median_s for o in ttft)
    assert "vllm     over the profile the server counted" in err and "0 preemptions" in err
    # the drift canary, as bench sends it to a vLLM: no slot to pin
    assert profile.canary is not None and profile.canary.slot is None
    assert len(profile.canary.readings) == 9 and all(r.tpot_ms for r in profile.canary.readings)
    fit = fit_profile(obs)
    shapes = [  # (decoders, context each, prompt tokens, cached before them)
        *((d, 100, 0, 0) for d in (1, 4, 8)),
        (8, 576, 0, 0),
        (0, 0, 128, 0),
        (0, 0, 512, 0),
        (0, 0, 128, 256),
        (4, 80, 256, 0),
        (16, 200, 0, 0),  # past the batches measured: along the fitted line
    ]
    for d, ctx, n, k in shapes:
        scripted = COSTS.step_s([ctx] * d, [(n, k)] if n else [])
        fitted = fit.step_s(d, d * ctx, n, n * (k + n / 2))
        assert LOW < fitted / scripted < HIGH, (d, ctx, n, k, fitted, scripted)
    for p in (16, 384):
        scripted = COSTS.request_overhead_s + COSTS.request_per_prompt_token_s * p
        assert fit.request_cost_s(p) > 0.9 * scripted
    # the same profile refuses a vLLM of another block size, found behind a proxy that
    # names no engine in /v1/models: detected by its /metrics
    other = VllmScript(COSTS, block_size=16, num_gpu_blocks=2912, owned_by="proxy")
    with running_fake_vllm(other) as url:
        ident = _identity(url)
    assert ident.kind == "vllm" and ident.vllm is not None and ident.vllm.block_size == 16
    with pytest.raises(InferlabError, match="the server's block_size is 16, the profile's 128"):
        check_profile_matches(profile, ident, force=False)
