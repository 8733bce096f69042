"""Which was slower, the machine or the server: the drift canary (a request to the server)
read beside the machine canary (a fixed matmul and memory read on the server's cores,
bench/machine_canary.py), and the records summary.json keeps of the latter.

The rule (`which_slowed`), a reference set of readings against a measured one (a run's
readings at rest at the start against its later ones, or one run's against another's):

1. Each canary's ratio is median(measured) / median(reference) (the machine canary's value
   is matmul_ms + read_ms); its noise is max(5 %, the reference's spread), the spread
   being (max - min) / median of the reference readings; where both sets were read at
   rest (one run against another) the measured set's spread counts too (within a run,
   the later readings' spread is the drift being judged, not noise).
2. The machine was slower when its ratio m > 1 + its noise; it moved when |m - 1| is
   beyond its noise.
3. The server's own part is the server canary's ratio s, divided by m where the machine
   moved (a server sharing the machine's cores slows with them), its noise then the sum of
   both canaries' noises (else the server canary's alone).
4. The server was slower when its own part > 1 + that noise.
5. Both, the machine alone, the server alone, or neither.

summary.json's `canary.machine` is a `MachineCanary` (summary.py, beside its other records).
`verdict_of(a)` judges one run; `verdict_of(a, b)` run b against run a.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from inferlab.metrics.checks import DRIFT_FLOOR
from inferlab.metrics.speed_shift import spread_of
from inferlab.summary import Canary, MachineCanary, Slower, WhichSlowed

# (the machine was slower, the server's own part was slower) -> the verdict
_SAYS: dict[tuple[bool, bool], Slower] = {
    (True, True): "both",
    (True, False): "machine",
    (False, True): "server",
    (False, False): "neither",
}


def noise_of(reference: Sequence[float]) -> float:
    """max(5 %, (max - min) / median of the reference readings)."""
    return max(DRIFT_FLOOR, spread_of(reference) or 0.0)


def _ratio(reference: Sequence[float], measured: Sequence[float]) -> float:
    return statistics.median(measured) / statistics.median(reference)


def which_slowed(
    server_reference_ms: Sequence[float],
    server_measured_ms: Sequence[float],
    machine_reference_ms: Sequence[float],
    machine_measured_ms: Sequence[float],
    *,
    both_at_rest: bool = False,
) -> WhichSlowed | None:
    """The rule of the module docstring; None where a side has no reading (or a zero).
    `both_at_rest`: the measured readings were taken at rest too (another run's)."""
    sides = (server_reference_ms, server_measured_ms, machine_reference_ms, machine_measured_ms)
    if any(not xs or statistics.median(xs) <= 0 for xs in sides):
        return None

    def noise(ref: Sequence[float], measured: Sequence[float]) -> float:
        return max(noise_of(ref), noise_of(measured)) if both_at_rest else noise_of(ref)

    m = _ratio(machine_reference_ms, machine_measured_ms)
    tm = noise(machine_reference_ms, machine_measured_ms)
    s = _ratio(server_reference_ms, server_measured_ms)
    ts = noise(server_reference_ms, server_measured_ms)
    moved = abs(m - 1.0) > tm
    own, to = (s / m, ts + tm) if moved else (s, ts)
    machine, server = m > 1.0 + tm, own > 1.0 + to
    says = _SAYS[(machine, server)]
    return WhichSlowed(
        says=says,
        machine_ratio=m,
        machine_noise=tm,
        server_ratio=s,
        server_noise=ts,
        server_own_ratio=own,
        server_own_noise=to,
    )


def _pct(ratio: float) -> str:
    pct = round((ratio - 1.0) * 100)
    return f"{pct:+d} %" if pct else "+0 %"  # never "-0 %"


_HEADS: dict[Slower, str] = {
    "machine": "the machine was slower",
    "server": "the server was slower, the machine",
    "both": "both the machine and the server were slower",
    "neither": "neither was slower",
}


def _head(v: WhichSlowed) -> str:
    """The verdict in words, and which side sped up where one did."""
    machine = "faster" if v.machine_ratio < 1.0 - v.machine_noise else "held"
    server = "faster" if v.server_own_ratio < 1.0 - v.server_own_noise else "held"
    if v.says == "server":
        return f"{_HEADS['server']} {'faster' if machine == 'faster' else 'not'}"
    if v.says != "neither":
        return _HEADS[v.says]
    if machine == server == "held":
        return "neither the machine nor the server was slower"
    return f"neither was slower: the machine {machine}, the server {server}"


def _noise(x: float) -> str:
    return f"noise {x * 100:.0f} %"


def verdict_words(v: WhichSlowed) -> str:
    """One sentence: the verdict, then the figures it read in parentheses."""
    machine = f"machine canary {_pct(v.machine_ratio)}, {_noise(v.machine_noise)}"
    server = f"server canary {_pct(v.server_ratio)}, {_noise(v.server_noise)}"
    if v.server_own_ratio != v.server_ratio:  # the machine moved: the server's part beyond it
        server += (
            f"; {_pct(v.server_own_ratio)} beyond the machine's move, {_noise(v.server_own_noise)}"
        )
    return f"{_head(v)} ({machine}; {server})"


def verdict_of(a: Canary, b: Canary | None = None) -> WhichSlowed | None:
    """The rule on a run's canaries: b None, run a's readings at rest against its later
    ones; else run b's readings at rest against run a's (one run against another). None
    where a run has no machine canary or a side has no reading."""
    ma = a.machine
    if ma is None:
        return None
    rest_s, rest_m = _split(a, ma, at_rest=True)
    if b is None:
        later_s, later_m = _split(a, ma, at_rest=False)
        return which_slowed(rest_s, later_s, rest_m, later_m)
    mb = b.machine
    if mb is None:
        return None
    b_s, b_m = _split(b, mb, at_rest=True)
    return which_slowed(rest_s, b_s, rest_m, b_m, both_at_rest=True)


def _split(c: Canary, m: MachineCanary, at_rest: bool) -> tuple[list[float], list[float]]:
    """The server canary's TPOTs and the machine canary's ms of the readings at rest (or
    of the later ones)."""
    pairs = [(r, x) for r, x in zip(c.readings, m.readings, strict=False) if r.at_rest == at_rest]
    server = [r.tpot_ms for r, _ in pairs if r.tpot_ms is not None]
    return server, [x.machine_ms for _, x in pairs if x is not None]
