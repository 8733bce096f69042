"""How far the machine's speed moved between two runs, read from the drift canary both took.

The drift canary is bench/canary.py's request: the same prompt, forced length and (on
llama-server) slot, sent while the server is otherwise idle; its TPOT is the machine's
speed. The profile takes it around its probes (profile.json `canary`), the demo just
before and just after the engine-alone measurement (llama-bench has no HTTP: the canary
goes to the demo's idle server), bench at rest and after every level (summary.json
`canary`). `speed_shift` sets a reference's readings against a measurement's: the ratio of
their medians (above 1: the machine ran slower during the measurement), and whether it lies
beyond both sides' own spread ((max - min) / median of each side's readings, and at least
DRIFT_FLOOR, below which bench never calls a move drift): within it, the canaries cannot
tell the two speeds apart.

A split read at a speed the engine alone did not run at (`split_line`): the engine's step
scaled by the ratio is what it would have been at the served level's speed, and the part
of the split that move accounts for is set beside the serving part it would move.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Literal

from inferlab.metrics.checks import DRIFT_FLOOR
from inferlab.summary import Canary, EngineSplit, SpeedShift


def readings_ms(canary: Canary | None) -> list[float]:
    """Every canary TPOT of a run that came back (each was sent to an idle server)."""
    if canary is None:
        return []
    return [r.tpot_ms for r in canary.readings if r.tpot_ms is not None]


def level_readings_ms(canary: Canary | None, label: str) -> list[float]:
    """The canary TPOTs just before and just after each run of one level (bench: the last
    reading that names the run as the one it preceded, and the reading after it)."""
    if canary is None:
        return []
    rs = canary.readings
    last = {(r.before, r.repeat): i for i, r in enumerate(rs)}
    at = sorted(i for (before, _), i in last.items() if before == label)
    near = sorted({j for i in at for j in (i, i + 1) if j < len(rs)})
    return [t for j in near if (t := rs[j].tpot_ms) is not None]


def spread_of(xs: Sequence[float]) -> float | None:
    """(max - min) / median; None with fewer than two readings."""
    med = statistics.median(xs) if xs else 0.0
    if len(xs) < 2 or med <= 0:
        return None
    return (max(xs) - min(xs)) / med


def speed_shift(
    against: Literal["profile", "engine_alone"],
    reference_ms: Sequence[float],
    measured_ms: Sequence[float],
    level: str | None = None,
) -> SpeedShift | None:
    """The measurement's canary against the reference's; None where either has none."""
    ref = statistics.median(reference_ms) if reference_ms else 0.0
    if ref <= 0 or not measured_ms:
        return None
    meas = statistics.median(measured_ms)
    s_ref, s_meas = spread_of(reference_ms), spread_of(measured_ms)
    threshold = max(s_ref or 0.0, s_meas or 0.0, DRIFT_FLOOR)
    return SpeedShift(
        against=against,
        level=level,
        reference_readings_ms=tuple(reference_ms),
        reference_tpot_ms=ref,
        reference_spread=s_ref,
        measured_tpot_ms=meas,
        measured_spread=s_meas,
        ratio=meas / ref,
        threshold=threshold,
        beyond_noise=abs(meas / ref - 1) > threshold,
    )


def profile_shift(profile: Canary | None, measured: Canary | None) -> SpeedShift | None:
    """The measurement's canary over the whole run against the profile's."""
    return speed_shift("profile", readings_ms(profile), readings_ms(measured))


def engine_shift(
    engine_ms: Sequence[float], measured: Canary | None, label: str
) -> SpeedShift | None:
    """The canary around one served level against the one around the engine alone."""
    return speed_shift("engine_alone", engine_ms, level_readings_ms(measured, label), label)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.0f} %"


def ran(a_ms: float, b_ms: float) -> str:
    """How much slower (or faster) a reading of `a_ms` ran than one of `b_ms`."""
    return f"{pct(abs(a_ms / b_ms - 1))} {'slower' if a_ms >= b_ms else 'faster'}"


def noise_words(s: SpeedShift, names: tuple[str, str]) -> str:
    """Beyond or within both sides' own canary spread, each side's named."""
    spreads = (
        f"{names[0]} {pct(s.reference_spread)}, {names[1]} {pct(s.measured_spread)}; "
        f"a move over {pct(s.threshold)} is beyond them"
    )
    where = "beyond" if s.beyond_noise else "within"
    return f"{where} both runs' own canary spread ({spreads})"


def split_line(s: SpeedShift, split: EngineSplit) -> str:
    """The split at one served level, read with the canary's move since the engine alone
    ran: the speed move's share of the engine's step beside the serving part it moves."""
    ref, meas = s.reference_tpot_ms, s.measured_tpot_ms
    head = (
        f"the canary ran {ran(ref, meas)} during the engine-alone measurement than during "
        f"the served level {s.level} (canary TPOT {ref:.1f} ms against {meas:.1f} ms), "
        f"{noise_words(s, ('engine alone', s.level or 'served'))}"
    )
    if not s.beyond_noise:
        return f"{head}: the split is read at one machine speed"
    engine_now = split.engine_step_time_s * s.ratio  # the engine's step at the level's speed
    moved = engine_now - split.engine_step_time_s
    serving = split.serving_overhead_s
    serving_now = split.served_tpot_s - engine_now
    verdict = (
        "the split is not reliable at that size"
        if abs(moved) >= abs(serving)
        else "serving's part is larger than that move: its sign holds, not its size"
    )
    return (
        f"{head}: that move alone is {moved * 1e3:+.1f} ms of the engine's step against "
        f"serving {serving * 1e3:+.1f} ms: {verdict}; at the served level's speed "
        f"(the engine's step x{s.ratio:.2f}, the canary's ratio: stated as such) serving "
        f"would be {serving_now * 1e3:+.1f} ms ({serving_now / split.served_tpot_s * 100:+.0f} %)"
    )
