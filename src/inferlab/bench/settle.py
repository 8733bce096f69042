"""llama-server's slots released in the order a fresh server fills them (bench --settle-slots).

llama-server gives a new task the idle slot released longest ago (`get_available_slot`'s
LRU, server-context.cpp 1756 at the pinned build; an idle server's slots are all
"never", and the last of equals wins, so it fills them from the highest id down). With
one KV stream per slot (an explicit --parallel), a step's sequences in slots that are not
consecutive are computed in ubatches of their own (src/llama-kv-cache.cpp 731,
split_equal; specs/llamacpp_ubatches.py). So a level inherits the order the previous level, or a
probe, released the slots in: in one demo run the profile's last probe had released slots 0, 2,
4, ... 14 last, the sweep's 4 and 8 streams then sat on every other slot, one ubatch each,
and decoded 19-27 % slower than the simulator's idle server predicted (which fills 15, 14,
13, ...). One request of one token pinned to each slot (`id_slot`), from the highest id
down and one after another, leaves the slots in an idle server's order again. Its prompt
shares at most a first token with a workload's, so no slot is then chosen by prompt
similarity (nor does a slot keep a prefix an earlier level cached there). The user's
--extra-body is not sent with it (a settle request is one token whatever the body says),
and it is cut after SETTLE_TIMEOUT_S.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import aiohttp

from inferlab.bench.client import Endpoint, stream_request
from inferlab.errors import InferlabError
from inferlab.records import RequestRecord

SETTLE_TEXT = "Hi"  # one token: no workload prompt starts with it alone
SETTLE_TIMEOUT_S = 30.0  # one token takes ~0.1 s; a slot that never frees ends here


def pinned(endpoint: Endpoint, slot: int) -> Endpoint:
    """`endpoint` on /completions without the prompt cache, its requests pinned to `slot`
    (and nothing else in their body), cut after SETTLE_TIMEOUT_S."""
    return dataclasses.replace(
        endpoint.pinned_to(slot),
        api="completions",
        cache_prompt=False,
        request_timeout_s=min(endpoint.request_timeout_s, SETTLE_TIMEOUT_S),
    )


async def settle_slots(
    session: aiohttp.ClientSession, endpoint: Endpoint, slots: int, t0_ns: int
) -> list[int]:
    """One 1-token request to each of `slots` slots, highest first; the slots, in the order
    released. InferlabError (one line) if the server fails one."""
    order = list(range(slots - 1, -1, -1))
    for k in order:
        rec = RequestRecord(-1, "settle", "warmup", 1, 1)
        await stream_request(session, pinned(endpoint, k), rec, SETTLE_TEXT, t0_ns)
        if not rec.ok:
            raise InferlabError(
                f"the server failed a request pinned to slot {k} while settling its slots "
                f"({rec.error or f'HTTP {rec.http_status}'}): is it still running?"
            )
    return order


def slot_count(kind: str, props: dict[str, Any] | None, url: str) -> int:
    """How many slots --settle-slots releases: llama-server's /props total_slots; a server
    that is not llama-server, or does not say, is refused in one line."""
    n = (props or {}).get("total_slots")
    if kind != "llamacpp" or not isinstance(n, int) or n < 1:
        raise InferlabError(
            f"--settle-slots pins requests to llama-server's slots, and {url} is not a "
            f"llama-server that states its slots (server kind {kind}, /props total_slots "
            f"{n!r}): drop --settle-slots"
        )
    return n
