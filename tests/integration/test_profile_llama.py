"""The profile's probes on the real llama-server (bundled SmolLM2, 4 slots of 256 tokens):
its identity from /props, the prefix it really reused (timings.cache_n) and the server's
own prefill time (timings.prompt_ms), a decode batch, one mixed stall, the chat template.
Only what holds whatever the machine's load is asserted."""

from __future__ import annotations

import asyncio

import pytest

from inferlab.engines.llama_server import LlamaServer
from inferlab.profile import mixed, probes
from inferlab.profile.record import Observation, ServerIdentity
from inferlab.profile.run_profile import ProfileConfig, connected
from inferlab.profile.template import Template, chat_template
from tests.integration.conftest import SLOTS

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def _probe(url: str) -> tuple[ServerIdentity, list[Observation], Template | None]:
    async with connected(ProfileConfig(url, threads=1)) as (c, ident):
        out = [await probes.prefix(c, 160, 96, 1)]
        out.append(await probes.streams(c, "decode", 2, 16, 24, 1))
        out += await mixed.mixed(c, 1, (64,), 1)
        template = await chat_template(c)
    return ident, out, template


def test_probes_read_the_real_server(llama: LlamaServer) -> None:
    ident, (prefix, decode, stall), template = asyncio.run(_probe(llama.base_url))
    # SmolLM2's ChatML template: a default system prompt and <|im_start|>user ... markers
    # on the first message, about 5 tokens around each earlier one; the system prompt and
    # the user's marker alike in every chat (the reply's opening is not)
    assert template is not None
    assert 15 <= template.first <= 60 and 3 <= template.per_message <= 12, template
    assert template.shared is not None and 10 <= template.shared < template.first, template
    assert ident.parallel == SLOTS and ident.ctx_per_slot == 256 and ident.kind == "llamacpp"
    assert ident.model.endswith(llama.gguf.name) and ident.threads == 1
    assert prefix.cached_tokens == 96 and prefix.prompt_tokens == 160 - 96
    # the server's prefill step is within the TTFT (the request's own cost is the rest)
    assert prefix.server_step_s is not None and 0 < prefix.server_step_s < prefix.median_s
    assert decode.decoders in (1, 2) and decode.n >= probes.MIN_GAPS
    if decode.decoders == 2:  # both streams overlapped: /metrics was read over that window
        assert decode.server_step_s is not None and decode.server_step_s > 0
    assert stall.probe == "mixed" and stall.decoders == 1 and stall.prompt_tokens == 64
    assert stall.median_s > 0
