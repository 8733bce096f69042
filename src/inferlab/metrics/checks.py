"""Honesty checks: each is a named warning {code, level, severity, message}.

`level` is the load level it concerns ("c=8", "rate=4/s", or "run").
Severity "error" marks results that are wrong as measured (they fail --strict);
"warning" marks results that may be distorted; "info" is context.
"""

from __future__ import annotations

from typing import Any

from inferlab.metrics.stats import thin_percentiles
from inferlab.physics.measured import IMPOSSIBLE_CAUSES
from inferlab.records import RequestRecord


def warning(code: str, level: str, severity: str, message: str) -> dict[str, str]:
    return {"code": code, "level": level, "severity": severity, "message": message}


def check_level(
    s: dict[str, Any],
    records: list[RequestRecord],
    prompt_tokens_expected: int,
    ceiling_tokens_per_s: float | None,
    client: dict[str, float],
    lag_threshold_s: float = 0.005,
) -> list[dict[str, str]]:
    lv = s["label"]
    out: list[dict[str, str]] = []
    ok = [r for r in records if r.phase == "measure" and r.ok]
    if s["requests_failed"]:
        errs = "; ".join(s["errors"])
        out.append(
            warning(
                "requests_failed",
                lv,
                "error",
                f"{s['requests_failed']} of {s['requests_measured']} requests failed: {errs}",
            )
        )  # noqa: E501
    early = [r for r in ok if r.early_stop]
    if early:
        r = early[0]
        out.append(
            warning(
                "early_stop",
                lv,
                "error",
                f"{len(early)} requests stopped early (e.g. finish_reason="
                f"{r.finish_reason!r}, N_out={r.n_out} of {r.max_tokens}): the server "
                "ignored ignore_eos/min_tokens; TPOT mixes different lengths",
            )
        )
    over = [r for r in ok if r.completion_tokens is not None and r.completion_tokens > r.max_tokens]
    if over:
        out.append(
            warning(
                "output_over_max",
                lv,
                "error",
                f"{len(over)} requests report more completion tokens than max_tokens "
                f"({over[0].completion_tokens} > {over[0].max_tokens}): prompt tokens "
                "counted as output?",
            )
        )
    off = [
        r for r in ok if r.prompt_tokens is not None and r.prompt_tokens != prompt_tokens_expected
    ]
    if off:
        out.append(
            warning(
                "prompt_tokens_off",
                lv,
                "warning",
                f"{len(off)} requests had usage.prompt_tokens != {prompt_tokens_expected} "
                f"(e.g. {off[0].prompt_tokens})",
            )
        )
    cached = [r for r in ok if r.cached_prompt_tokens]
    if cached:
        out.append(
            warning(
                "prefix_cache_hit",
                lv,
                "warning",
                f"{len(cached)} requests reused cached prompt tokens: TTFT is optimistic",
            )
        )
    if s["streamed_tokens_mismatch"]:
        out.append(
            warning(
                "token_count_mismatch",
                lv,
                "warning",
                f"{s['streamed_tokens_mismatch']} requests streamed a different number of "
                "tokens than usage reports: some events carried several tokens",
            )
        )
    if s["multi_token_events"]:
        out.append(
            warning(
                "multi_token_events",
                lv,
                "warning",
                f"{s['multi_token_events']} events carried several tokens; their gaps were "
                "split evenly, which hides the true gap distribution",
            )
        )
    if s["malformed_events"]:
        out.append(
            warning(
                "malformed_events",
                lv,
                "warning",
                f"{s['malformed_events']} malformed SSE lines or events were skipped",
            )
        )
    if ceiling_tokens_per_s and s["output_tokens_per_s_per_user"] > ceiling_tokens_per_s * 1.001:
        out.append(
            warning(
                "above_ceiling",
                lv,
                "error",
                f"per-user rate {s['output_tokens_per_s_per_user']:.4g} tok/s exceeds the "
                f"physical ceiling {ceiling_tokens_per_s:.4g} tok/s of the stated floor; "
                "usual causes: " + "; ".join(IMPOSSIBLE_CAUSES),
            )
        )
    if client["loop_lag_p99_s"] > lag_threshold_s or client["cpu_fraction"] > 0.8:
        out.append(
            warning(
                "client_saturation",
                lv,
                "warning",
                f"the client itself was busy (event-loop lag p99 "
                f"{client['loop_lag_p99_s'] * 1e3:.3g} ms, CPU {client['cpu_fraction']:.0%}"
                " of a core): its timestamps may be late",
            )
        )
    thin = thin_percentiles(s["gap_s"]["n"])
    if thin:
        out.append(
            warning(
                "few_samples",
                lv,
                "info",
                f"only {s['gap_s']['n']} gaps: {', '.join(thin)} of the gaps are not meaningful",
            )
        )
    return out
