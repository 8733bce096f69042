"""The gap proxy (testing/gap_proxy.py), the known change the paired A/B is checked
against: its release schedule stretches every gap by the share asked and never releases
an event before it arrived; through it, a stream arrives whole and in order."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from inferlab.testing.fake_server import running_fake_server
from inferlab.testing.gap_proxy import Pacer, running_gap_proxy


def release_times(arrived_s: list[float], stretch: float) -> list[float]:
    pacer = Pacer(stretch)
    return [pacer.due(t) for t in arrived_s]


def test_every_gap_is_stretched_by_the_share_and_the_first_event_passes() -> None:
    out = release_times([1.0, 1.02, 1.04, 1.10], 0.10)
    assert out[0] == 1.0
    gaps = [b - a for a, b in zip(out, out[1:], strict=False)]
    assert gaps == pytest.approx([0.022, 0.022, 0.066])


def test_an_event_is_never_released_before_it_arrived() -> None:
    arrived = [0.0, 0.01, 0.5]  # a long pause: the stretched schedule is behind it
    out = release_times(arrived, 0.10)
    assert all(o >= a for o, a in zip(out, arrived, strict=True))
    assert out[2] == pytest.approx(0.011 + 0.49 * 1.1)
    assert release_times([0.0, 0.02, 0.04], 0.0) == [0.0, 0.02, 0.04]  # 0: a plain proxy


async def _completion(base: str) -> tuple[int, list[str]]:
    body = {"model": "fake", "prompt": "a b c", "max_tokens": 6, "stream": True}
    async with (
        aiohttp.ClientSession() as s,
        s.post(f"{base}/completions", json=body) as r,
    ):
        text = (await r.read()).decode()
    return r.status, [e for e in text.split("\n\n") if e.strip()]


@pytest.mark.slow
def test_a_stream_through_the_proxy_arrives_whole_and_in_order() -> None:
    with running_fake_server(ttft=0.01, tpot=0.005) as direct:
        with running_gap_proxy(direct, 0.5) as proxied:
            status_p, events_p = asyncio.run(_completion(proxied))
        status_d, events_d = asyncio.run(_completion(direct))
    assert status_p == status_d == 200
    assert len(events_p) == len(events_d) >= 6 and events_p[-1] == "data: [DONE]"
    assert [e.split('"text"')[0][:6] for e in events_p] == [
        e.split('"text"')[0][:6] for e in events_d
    ]


async def _duration_s(base: str, tokens: int) -> float:
    body = {"model": "fake", "prompt": "a b c", "max_tokens": tokens, "stream": True}
    async with aiohttp.ClientSession() as s:
        t = asyncio.get_running_loop().time()
        async with s.post(f"{base}/completions", json=body) as r:
            await r.read()
        return asyncio.get_running_loop().time() - t


@pytest.mark.slow
def test_the_stretch_does_not_compound_along_a_stream() -> None:
    """Each gap is the upstream's x 1.5, not the one before it x 1.5: read only after each
    release, 40 gaps of 5 ms would grow to 5 ms x 1.5^39 (hours). The bound (10 x the
    direct stream, + 1 s) is that failure's, a thousandfold away from the expected 1.5 x."""
    with running_fake_server(ttft=0.01, tpot=0.005, slow_every=1000) as direct:
        with running_gap_proxy(direct, 0.5) as proxied:
            through = asyncio.run(_duration_s(proxied, 41))
        alone = asyncio.run(_duration_s(direct, 41))
    assert through < 10 * alone + 1.0, (through, alone)
