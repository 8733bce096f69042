"""Honesty checks: each is a small function returning a named warning or None.

`level` is the load level it concerns ("c=8", "rate=4/s", or "run").
Severity "error" marks results that are wrong as measured (they fail --strict);
"warning" marks results that may be distorted; "info" is context.
Adding a check is adding a function to `CHECKS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from inferlab.metrics.stats import thin_percentiles
from inferlab.physics.measured import check_claim
from inferlab.records import RequestRecord
from inferlab.summary import ClientStats, LevelSummary, RunWarning
from inferlab.vocab import Severity


def warning(code: str, level: str, severity: Severity, message: str) -> RunWarning:
    return RunWarning(code, level, severity, message)


@dataclass(frozen=True, slots=True)
class LevelFacts:
    """What a check may look at: the level's summary, its records and the run's settings."""

    summary: LevelSummary
    ok: list[RequestRecord]  # measured requests that succeeded
    prompt_tokens_expected: int
    ceiling_tokens_per_s: float | None
    client: ClientStats
    lag_threshold_s: float = 0.005
    # True: prompt_tokens_expected is the chat template's extra tokens, added to each
    # record's own target (lengths drawn from a distribution differ per request).
    per_request_target: bool = False


Check = Callable[[LevelFacts], RunWarning | None]


def _failed(f: LevelFacts) -> RunWarning | None:
    s = f.summary
    if not s.requests_failed:
        return None
    errs = "; ".join(s.errors)
    msg = f"{s.requests_failed} of {s.requests_measured} requests failed: {errs}"
    return warning("requests_failed", s.label, "error", msg)


def _early_stop(f: LevelFacts) -> RunWarning | None:
    early = [r for r in f.ok if r.early_stop]
    if not early:
        return None
    r = early[0]
    return warning(
        "early_stop",
        f.summary.label,
        "error",
        f"{len(early)} requests stopped early (e.g. finish_reason="
        f"{r.finish_reason!r}, N_out={r.n_out} of {r.max_tokens}): the server "
        "ignored ignore_eos/min_tokens; TPOT mixes different lengths",
    )


def _over_max(f: LevelFacts) -> RunWarning | None:
    over = [
        r for r in f.ok if r.completion_tokens is not None and r.completion_tokens > r.max_tokens
    ]
    if not over:
        return None
    return warning(
        "output_over_max",
        f.summary.label,
        "error",
        f"{len(over)} requests report more completion tokens than max_tokens "
        f"({over[0].completion_tokens} > {over[0].max_tokens}): prompt tokens "
        "counted as output?",
    )


def _prompt_off(f: LevelFacts) -> RunWarning | None:
    extra = f.prompt_tokens_expected

    def want(r: RequestRecord) -> int:
        return r.prompt_tokens_target + extra if f.per_request_target else extra

    # A conversation's turn is templated by the server (chat roles, its history): its
    # new message is made exact with /tokenize, the whole prompt is not checked here.
    off = [
        r
        for r in f.ok
        if r.prompt_tokens is not None and r.conversation_id is None and r.prompt_tokens != want(r)
    ]
    if not off:
        return None
    msg = (
        f"{len(off)} requests had usage.prompt_tokens != {want(off[0])} "
        f"(e.g. {off[0].prompt_tokens})"
    )
    return warning("prompt_tokens_off", f.summary.label, "warning", msg)


def _cached(f: LevelFacts) -> RunWarning | None:
    cached = [r for r in f.ok if r.cached_prompt_tokens]
    if not cached:
        return None
    msg = f"{len(cached)} requests reused cached prompt tokens: TTFT is optimistic"
    return warning("prefix_cache_hit", f.summary.label, "warning", msg)


def _mismatch(f: LevelFacts) -> RunWarning | None:
    n = f.summary.streamed_tokens_mismatch
    if not n:
        return None
    msg = (
        f"{n} requests streamed a different number of "
        "tokens than usage reports: some events carried several tokens"
    )
    return warning("token_count_mismatch", f.summary.label, "warning", msg)


def _multi_token(f: LevelFacts) -> RunWarning | None:
    n = f.summary.multi_token_events
    if not n:
        return None
    msg = (
        f"{n} events carried several tokens; their gaps were "
        "split evenly, which hides the true gap distribution"
    )
    return warning("multi_token_events", f.summary.label, "warning", msg)


def _malformed(f: LevelFacts) -> RunWarning | None:
    n = f.summary.malformed_events
    if not n:
        return None
    msg = f"{n} malformed SSE lines or events were skipped"
    return warning("malformed_events", f.summary.label, "warning", msg)


def _above_ceiling(f: LevelFacts) -> RunWarning | None:
    rate, ceiling = f.summary.output_tokens_per_s_per_user, f.ceiling_tokens_per_s
    if not ceiling:
        return None
    chk = check_claim(rate, ceiling)
    if chk.possible:
        return None
    return warning(
        "above_ceiling",
        f.summary.label,
        "error",
        f"per-user rate {rate:.4g} tok/s exceeds the "
        f"physical ceiling {ceiling:.4g} tok/s of the stated floor; "
        "usual causes: " + "; ".join(chk.causes),
    )


def _client_busy(f: LevelFacts) -> RunWarning | None:
    c = f.client
    if c.loop_lag_p99_s <= f.lag_threshold_s and c.cpu_fraction <= 0.8:
        return None
    busy = [
        f"worker {w.worker} on {w.host} (lag p99 {(w.loop_lag_p99_s or 0) * 1e3:.3g} ms, "
        f"CPU {w.cpu_fraction or 0:.0%})"
        for w in f.summary.workers or ()
        if (w.loop_lag_p99_s or 0) > f.lag_threshold_s or (w.cpu_fraction or 0) > 0.8
    ]
    who = f": {', '.join(busy)}; add --workers" if busy else ""
    return warning(
        "client_saturation",
        f.summary.label,
        "warning",
        f"the client itself was busy (event-loop lag p99 "
        f"{c.loop_lag_p99_s * 1e3:.3g} ms, CPU {c.cpu_fraction:.0%}"
        f" of a core){who}: its timestamps may be late",
    )


def _worker_lost(f: LevelFacts) -> RunWarning | None:
    lost = [w for w in f.summary.workers or () if w.lost]
    if not lost:
        return None
    parts = [
        f"worker {w.worker} ({w.lost}): {w.lost_in_flight} in-flight requests recorded as "
        f"failed, {w.not_started} never sent"
        for w in lost
    ]
    msg = "; ".join(parts) + "; the level completed on the other workers"
    return warning("worker_lost", f.summary.label, "error", msg)


def _tpot_unseen(f: LevelFacts) -> RunWarning | None:
    """Every token of a request stamped at one instant: the client read the whole stream
    at once (its loop was blocked), so the request has no TPOT and the stats leave it out
    (the requests of several tokens that the TPOT stats do not count)."""
    unseen = sum(1 for r in f.ok if r.n_out > 1) - f.summary.tpot_s.n
    if not unseen:
        return None
    msg = (
        f"{unseen} of {len(f.ok)} requests had every token read at one instant (the "
        "client read the stream late): TPOT is over the other requests only"
    )
    return warning("tpot_unseen", f.summary.label, "warning", msg)


def _few_samples(f: LevelFacts) -> RunWarning | None:
    n = f.summary.gap_s.n
    thin = thin_percentiles(n)
    if not thin:
        return None
    msg = f"only {n} gaps: {', '.join(thin)} of the gaps are not meaningful"
    return warning("few_samples", f.summary.label, "info", msg)


CHECKS: tuple[Check, ...] = (
    _failed,
    _early_stop,
    _over_max,
    _prompt_off,
    _cached,
    _mismatch,
    _multi_token,
    _malformed,
    _above_ceiling,
    _client_busy,
    _worker_lost,
    _tpot_unseen,
    _few_samples,
)


# The drift canary's rule (bench/canary.py): a level is warned machine_drift when the
# canary's TPOT moved by more than max(DRIFT_SPREADS x its relative spread at rest,
# DRIFT_FLOOR), either while the level ran (the reading after it against the one before)
# or against the run's start (either reading against the median at rest).
DRIFT_FLOOR = 0.05  # below 5 % a move is never called drift: the canary's own noise
DRIFT_SPREADS = 3.0  # nor within 3 x the spread its readings at rest showed


def drift_threshold(rest_spread: float | None) -> float:
    """How far (relative) the canary may move before a level is warned: max(3 x its
    spread at rest, 5 %); 5 % where the rest gave no spread (fewer than two readings)."""
    return max(DRIFT_SPREADS * (rest_spread or 0.0), DRIFT_FLOOR)


@dataclass(frozen=True, slots=True)
class CanaryAround:
    """The drift canary's TPOT (ms) around one run of a level: the reading just before it
    and just after it (None where there is none), and the median of those at rest."""

    before_ms: float | None
    after_ms: float | None
    rest_ms: float | None


def _pct(x: float) -> str:
    return f"{x * 100:+.0f} %"


def canary_moved(around: CanaryAround, threshold: float) -> str | None:
    """What the canary did beyond its noise around a level, in words; None if nothing.
    Its move while the level ran comes first; else the farther reading against the rest."""
    b, a, r = around.before_ms, around.after_ms, around.rest_ms
    if b is not None and a is not None and b > 0 and abs(a / b - 1) > threshold:
        return f"canary TPOT {b:.1f} -> {a:.1f} ms ({_pct(a / b - 1)}) while this level ran"
    seen = [x for x in (b, a) if x is not None]
    if r is None or r <= 0 or not seen:
        return None
    x = max(seen, key=lambda x: abs(x / r - 1))
    if abs(x / r - 1) <= threshold:
        return None
    return (
        f"canary TPOT {x:.1f} ms around this level against {r:.1f} ms at rest at the "
        f"start ({_pct(x / r - 1)})"
    )


def machine_drift(label: str, moves: list[str], threshold: float) -> RunWarning | None:
    """The named warning for a level measured while the machine's speed moved (the
    canary's `moves`, one per run of the level that moved); None when none did."""
    if not moves:
        return None
    return warning(
        "machine_drift",
        label,
        "warning",
        f"{'; '.join(moves)}: beyond the canary's own noise (a move over "
        f"{threshold * 100:.1f} % = max(3 x its spread at rest, 5 %)); the machine's speed, "
        "not only the load, moved this level's numbers",
    )


def check_level(
    s: LevelSummary,
    records: list[RequestRecord],
    prompt_tokens_expected: int,
    ceiling_tokens_per_s: float | None,
    client: ClientStats,
    lag_threshold_s: float = 0.005,
    per_request_target: bool = False,
) -> list[RunWarning]:
    """Every check in order; the warnings of those that found something.

    per_request_target: prompt_tokens_expected is the template's extra tokens beside each
    record's own prompt_tokens_target."""
    ok = [r for r in records if r.phase == "measure" and r.ok]
    facts = LevelFacts(
        s,
        ok,
        prompt_tokens_expected,
        ceiling_tokens_per_s,
        client,
        lag_threshold_s,
        per_request_target,
    )
    return [w for check in CHECKS if (w := check(facts)) is not None]
