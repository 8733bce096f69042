"""llama-server's slots released in the order a fresh server fills them (bench's default on
llama-server; --no-settle-slots turns it off), and what else carries state between levels.

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

Other engines have no slots to settle; what is known to carry state from one level (or
repeat) to the next on each is stated with the run (`carried_state`, an info note): vLLM's
automatic prefix caching and SGLang's radix cache keep earlier prompts' KV, so a later
level finds cached whatever prefix it shares with an earlier one. bench's prompts are fresh
per level and repeat, the prefixes a workload shares on purpose (prefix groups, turns, a
trace's hash blocks) included: those are shared within a level, salted with its seed, so
no level is served from what an earlier one left.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import aiohttp

from inferlab.bench.client import Endpoint, stream_request
from inferlab.errors import InferlabError
from inferlab.records import RequestRecord
from inferlab.summary import RunWarning

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


def slot_count(kind: str, props: dict[str, Any] | None, url: str, insist: bool = True) -> int:
    """How many slots are settled before each level: llama-server's /props total_slots. A
    server that is not llama-server, or does not say, settles none; with `insist`
    (--settle-slots given) it is refused in one line instead."""
    n = (props or {}).get("total_slots")
    if kind == "llamacpp" and isinstance(n, int) and n >= 1:
        return n
    if not insist:
        return 0
    raise InferlabError(
        f"--settle-slots pins requests to llama-server's slots, and {url} is not a "
        f"llama-server that states its slots (server kind {kind}, /props total_slots "
        f"{n!r}): drop --settle-slots"
    )


CARRIED_STATE = "carried_state"  # the note's code
# What an engine is known to keep from one level to the next (its documented defaults),
# and how to start each level cold; bench sends fresh prompts to every level and repeat.
_CACHES = {
    "vllm": (
        "vLLM keeps the KV blocks of earlier levels' prompts (automatic prefix caching, on "
        "by default in its V1 engine)",
        "--no-enable-prefix-caching, or a server restarted between runs",
    ),
    "sglang": (
        "SGLang keeps earlier levels' prompts in its radix cache (on by default)",
        "--disable-radix-cache, or a server restarted between runs",
    ),
}
_FRESH = (
    "bench sends fresh prompts to every level and repeat, shared prefixes included (a "
    "prefix group's, a trace's hash blocks: shared within the level only), so a level finds "
    "cached only what it shares with itself"
)


def carried_state(
    kind: str, dialect: str | None, slots_settled: int, asked: bool | None
) -> RunWarning:
    """The run's note on what carries state between its levels and repeats: `kind` as
    /v1/models names the engine (else the /metrics `dialect`), the slots settled before
    each level (0: none) and what was asked (--settle-slots True, --no-settle-slots False,
    None: the default)."""
    engine = kind if kind != "openai" else (dialect or kind)
    if engine == "llamacpp":
        msg = _llama_note(slots_settled, asked)
    elif engine in _CACHES:
        keeps, cold = _CACHES[engine]
        msg = f"{keeps}; {_FRESH}; for levels that start cold: {cold}"
    else:
        msg = (
            f"server kind {engine}: what it keeps between levels (a prefix cache, a slot "
            f"order) is not known to inferlab; {_FRESH}"
        )
    return RunWarning(CARRIED_STATE, "run", "info", msg)


def _llama_note(slots_settled: int, asked: bool | None) -> str:
    if slots_settled:
        return (
            f"llama-server: before each level (and repeat) its {slots_settled} slots were "
            "released highest id first, so each started from an idle server's slot order "
            "(bench --no-settle-slots: from the order the level before left); its prompt "
            "cache is asked for only where the workload's prompts share a prefix"
        )
    why = "--no-settle-slots" if asked is False else "its /props states no total_slots"
    return (
        f"llama-server, slots not settled ({why}): each level started from the slot order "
        "the level before left, and streams on slots that are not consecutive decode in "
        "ubatches of their own (c=4 and c=8 19-27 % slower in one demo run; docs/bench.md)"
    )
