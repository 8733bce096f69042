"""The host's CPU steal time over a level, read from Linux's /proc/stat.

On a virtual machine the hypervisor may run other guests on "our" cores: the time it
took is counted as steal, and a level measured while steal was high decoded on less CPU
than the one before (in one run of the bundled server, TPOT p50 93.2 ms at 9.6 % steal
against 64-73 ms at 0.4-4 %). The first line of /proc/stat sums every CPU:

    cpu  user nice system idle iowait irq softirq steal guest guest_nice   (in ticks)

guest and guest_nice are already inside user and nice, so the host's CPU time is the sum
of the first eight. Elsewhere than Linux there is no /proc/stat: nothing is recorded, and
the run says so (one info warning).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from inferlab.summary import HostLevel

PROC_STAT = Path("/proc/stat")
STEAL_FIELD = 7  # after user nice system idle iowait irq softirq
TIME_FIELDS = 8  # user .. steal: guest time is counted inside user and nice already


@dataclass(frozen=True, slots=True)
class CpuTicks:
    """Steal and all CPU time of the host, in ticks (since boot, or over an interval)."""

    steal: int
    total: int

    def __add__(self, other: CpuTicks) -> CpuTicks:
        return CpuTicks(self.steal + other.steal, self.total + other.total)

    def __sub__(self, other: CpuTicks) -> CpuTicks:
        return CpuTicks(self.steal - other.steal, self.total - other.total)

    @property
    def steal_fraction(self) -> float | None:
        """Steal over all CPU time; None when no time passed (an interval under one tick)."""
        return self.steal / self.total if self.total > 0 else None


def parse_cpu_line(text: str) -> CpuTicks | None:
    """The all-CPU line of /proc/stat's text as ticks; None when it has no such line."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu" and len(parts) > TIME_FIELDS:
            ticks = [int(x) for x in parts[1 : TIME_FIELDS + 1]]
            return CpuTicks(ticks[STEAL_FIELD], sum(ticks))
    return None


def read_cpu_ticks(path: Path = PROC_STAT) -> CpuTicks | None:
    """The host's CPU ticks now; None where there is no /proc/stat (not Linux)."""
    try:
        return parse_cpu_line(path.read_text())
    except (OSError, ValueError):
        return None


def no_steal_note() -> str:
    """Why a run records no steal time, for its info warning."""
    return (
        f"the host's CPU steal time is read from /proc/stat, which this host ({sys.platform}) "
        "does not have: not recorded"
    )


def host_level(ticks: CpuTicks | None) -> HostLevel | None:
    """A level's host block from its CPU ticks (None: not measured, or no tick passed)."""
    steal = ticks.steal_fraction if ticks is not None else None
    return None if steal is None else HostLevel(cpu_steal_fraction=steal)
