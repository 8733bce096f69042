"""What vLLM's /metrics counted while it was profiled, set beside what the probes saw.

After each TTFT probe (lone, prefix): the server's own prefill time of its requests, the
prompt tokens it computed in them and those its prefix cache gave (a unique prompt should
have none; a prefix probe's whole blocks). After the profile: its steps, preemptions
(a preempted request is recomputed: its probe's time holds that, and the line says so) and
prefix-cache hits over the whole profile, and each decode probe's step as the server
counted it (wall time over `vllm:iteration_tokens_total` steps) beside the gaps' median.
Only lines: the fit reads the counts it uses from the observations (profile/probes.py).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from inferlab.profile.record import Observation
from inferlab.profile.vllm_server import VllmCounters


def window_line(windows: Sequence[tuple[str, VllmCounters]]) -> str:
    """One TTFT probe's requests as vLLM counted them (those counted alone)."""
    probe = windows[0][0]
    alone = [w for _, w in windows if w.alone]
    if not alone:
        return (
            f"vllm     {probe}: no request counted alone (another client's requests, or "
            "none recorded): its TTFTs stand without the server's prefill time"
        )
    prefill = statistics.median(w.prefill_s for w in alone)
    computed = statistics.median(w.step_tokens - 1 for w in alone)  # less the sampled token
    hits = statistics.median(w.prefix_hits for w in alone)
    queried = statistics.median(w.prefix_queries for w in alone)
    return (
        f"vllm     {probe}: the server's prefill {prefill * 1e3:.2f} ms "
        f"(request_prefill_time), {computed:.0f} prompt tokens computed, {hits:.0f} of "
        f"{queried:.0f} from its prefix cache ({len(alone)} of {len(windows)} requests "
        "counted alone)"
    )


def decode_lines(obs: Sequence[Observation]) -> list[str]:
    """Each decode-like probe's step: the server's (its /metrics) beside the gaps' median."""
    out = []
    for o in obs:
        if o.decoders and o.server_step_s and o.probe in ("decode", "context"):
            out.append(
                f"vllm     {o.probe} D={o.decoders}: the server's step "
                f"{o.server_step_s * 1e3:.2f} ms (wall time over iteration_tokens_total "
                f"steps), the gaps' median {o.median_s * 1e3:.2f} ms "
                f"({(o.server_step_s - o.median_s) / o.median_s:+.1%})"
            )
    return out


def profile_lines(
    obs: Sequence[Observation], before: VllmCounters, after: VllmCounters | None
) -> list[str]:
    """What the server counted over the whole profile, and each decode probe's step."""
    if after is None:
        return ["vllm     its /metrics did not answer at the end: no totals"]
    d = after.minus(before)
    out = decode_lines(obs)
    out.append(
        f"vllm     over the profile the server counted {d.steps:.0f} steps carrying "
        f"{d.step_tokens:.0f} tokens, {d.prefix_hits:.0f} of {d.prefix_queries:.0f} prompt "
        f"tokens from its prefix cache, {d.preemptions:.0f} preemptions"
    )
    if d.preemptions:
        out.append(
            "vllm     preempted requests were recomputed while probed: their probes' times "
            "hold that (a KV cache too small for the probes: VLLM_CPU_KVCACHE_SPACE, "
            "--gpu-memory-utilization)"
        )
    return out
