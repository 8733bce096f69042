"""Fake-server scenarios for SLO work, each with an answer the tests know:

- `crowded-K` (K in 1, 2, 3, 5, 8, 12): every token gap is the script's TPOT while at
  most K streams are open, and grows by four TPOTs for each stream beyond K (latency grows
  with the number of open streams), so the highest concurrency within
  `tpot_p50 < 2.5 x TPOT` is exactly K. The steep step keeps that answer when a loaded
  client is late to read: a request at K + 1 still averages more than 2.5 x TPOT if K + 1
  streams are open for more than 3/8 of its life;
- `slo-mix`: request n (in arrival order) waits 300 ms more before its first token when
  n % 4 == 3, and fails with HTTP 500 when n % 10 == 9; /debug/log says which, per prompt;
- `reasoning`: the first half of the tokens stream as `reasoning_content` (chat), then
  the answer as `content`; the log keeps when the first answer token left.

Registered in fake_scenarios.SCENARIOS (`SLO_SCENARIOS`), one handler each.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from inferlab.bench.prompt_text import prompt_sha1
from inferlab.testing.fake_stream import Stream, sleep_until

SLOW_FIRST_TOKEN_S = 0.3  # slo-mix: the extra wait of every 4th request
CROWDED_KNEES = (1, 2, 3, 5, 8, 12)
CROWDING = 4  # TPOTs added to every gap for each open stream beyond the knee


class _Counts:
    """Per server process (one fake server per process): open crowded streams, slo-mix arrivals."""

    open_streams = 0
    arrivals = 0


def _crowded(knee: int) -> Callable[[Stream], Awaitable[web.StreamResponse]]:
    async def crowded(s: Stream) -> web.StreamResponse:
        """Each gap as the streams open now make it: TPOT x (1 + 4 x streams beyond the knee)."""
        await s.open()
        _Counts.open_streams += 1
        try:
            due = s.t_recv_s + s.script.ttft_s
            for j in range(s.max_tokens):
                if j:
                    due += s.script.tpot_s * (1 + CROWDING * max(0, _Counts.open_streams - knee))
                await sleep_until(due)
                s.sent += 1
                await s.token(" tok")
        finally:
            _Counts.open_streams -= 1
        return await s.finish("length")

    return crowded


async def slo_mix(s: Stream) -> web.StreamResponse:
    """Every 4th request late by 300 ms to its first token, every 10th an HTTP 500."""
    n = _Counts.arrivals
    _Counts.arrivals += 1
    slow, failed = n % 4 == 3, n % 10 == 9
    if failed:
        facts = {"recv_ns": s.recv_ns, "write_ns": [], "slow": slow, "failed": True}
        s.log[prompt_sha1(s.prompt)] = facts
        return web.json_response({"error": {"message": "scripted failure"}}, status=500)
    await s.open()
    s.log[prompt_sha1(s.prompt)].update(slow=slow, failed=False)
    late = SLOW_FIRST_TOKEN_S if slow else 0.0
    for j in range(s.max_tokens):
        await sleep_until(s.t_recv_s + late + s.script.ttft_s + j * s.script.tpot_s)
        s.sent += 1
        await s.token(" tok")
    return await s.finish("length")


async def reasoning(s: Stream) -> web.StreamResponse:
    """Half the tokens as reasoning_content (chat deltas), then the answer."""
    await s.open()
    thinking = s.max_tokens // 2
    async for j, _k in s.paced(s.max_tokens):
        if j < thinking:
            await s.send(s.chunk(" think").replace(b'"content"', b'"reasoning_content"', 1))
            continue
        if j == thinking:
            s.log[prompt_sha1(s.prompt)]["first_answer_ns"] = time.perf_counter_ns()
        await s.token(" tok")
    s.log[prompt_sha1(s.prompt)]["reasoning_tokens"] = thinking
    return await s.finish("length")


SLO_SCENARIOS: dict[str, Callable[[Stream], Awaitable[web.StreamResponse]]] = {
    "slo-mix": slo_mix,
    "reasoning": reasoning,
    **{f"crowded-{k}": _crowded(k) for k in CROWDED_KNEES},
}
