"""Arrival instants of an open-loop level: the one place inferlab draws them.

Poisson (exponential gaps), gamma (shape K = --burstiness, CV = 1/sqrt(K), as vLLM's
`--burstiness`: K < 1 is burstier than Poisson, K > 1 more regular) or constant
(gaps of exactly 1/rate). A level ends after a number of requests or at a duration.
Drawn with numpy in blocks, so a million instants take milliseconds.
"""

from __future__ import annotations

import math

import numpy as np

from inferlab.errors import ConfigError, InferlabError
from inferlab.load.spec import F64, ArrivalProcess

MAX_ARRIVALS = 100_000_000  # a hard stop for generated loads; the CLIs' own limits are lower


def _gaps(rng: np.random.Generator, process: ArrivalProcess, rate: float, k: float, n: int) -> F64:
    if process == "constant":
        return np.full(n, 1.0 / rate)
    if process == "gamma":
        return rng.gamma(k, 1.0 / (rate * k), n)
    return rng.exponential(1.0 / rate, n)


def check_rate(rate_per_s: float, burstiness: float) -> None:
    if not 0 < rate_per_s < math.inf:
        raise ConfigError("{rate} must be positive and finite, e.g. {rate} 5")
    if not 0 < burstiness < math.inf:
        raise ConfigError(f"{{burstiness}} must be positive, e.g. 0.5 (got {burstiness:g})")


def arrival_times(
    rng: np.random.Generator,
    process: ArrivalProcess,
    rate_per_s: float,
    burstiness: float = 1.0,
    count: int | None = None,
    duration_s: float | None = None,
) -> F64:
    """Instants after the level's start: the first `count`, or all before `duration_s`.

    The first request arrives after one gap (as a process already running would send it).
    """
    check_rate(rate_per_s, burstiness)
    if count is not None:
        if not 0 <= count <= MAX_ARRIVALS:
            raise InferlabError(f"a level takes at most {MAX_ARRIVALS:.0e} requests")
        return np.cumsum(_gaps(rng, process, rate_per_s, burstiness, count))
    if duration_s is None or not 0 < duration_s < math.inf:
        raise ConfigError("{duration_s} must be positive and finite, e.g. 60s")
    expected = rate_per_s * duration_s
    if expected >= MAX_ARRIVALS:
        raise ConfigError(
            f"{{rate}} x {{duration_s}} must give fewer than {MAX_ARRIVALS:.0e} requests "
            f"(got {expected:.3g})"
        )
    return _until(rng, process, rate_per_s, burstiness, duration_s)


def _until(
    rng: np.random.Generator, process: ArrivalProcess, rate: float, k: float, end_s: float
) -> F64:
    """Draw gaps in blocks until the running sum passes `end_s` (bounded: a tiny gamma shape
    can make gaps underflow to zero, so at most 4x the expected count plus a margin)."""
    expected = rate * end_s
    most = int(4 * expected) + 1000
    block = max(64, int(expected * 1.1) + 64)
    parts: list[F64] = []
    t, drawn = 0.0, 0
    while drawn <= most:
        times = t + np.cumsum(_gaps(rng, process, rate, k, block))
        inside = times[times < end_s]
        parts.append(inside)
        drawn += len(inside)
        if len(inside) < block:
            out = np.concatenate(parts)
            return out[:most] if len(out) > most else out
        t = float(times[-1])
    raise ConfigError(
        f"the arrivals did not reach {{duration_s}} {end_s:g} s after {most} requests; "
        "use a larger {burstiness}"
    )
