"""One interval of `watch`: scrape, window, derive, read — and survive a server that goes away.

A Frame is what every view draws (terminal, web page, exporter) and what the
record stores: the raw normalised snapshot, the derived quantities, the
device utilisation beside them, and a computed one-line reading.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferlab.errors import InferlabError
from inferlab.metrics.verdict import TimeNumbers, Verdict, decide
from inferlab.physics.floor import Floor
from inferlab.servermetrics.snapshot import Snapshot
from inferlab.watch.derive import Live, Quantity, derive
from inferlab.watch.window import SnapshotWindow


@dataclass(frozen=True, slots=True)
class Frame:
    t_unix_s: float
    t_mono_s: float
    up: bool
    down_since_unix_s: float | None  # set while the server does not answer
    error: str | None  # why the last scrape failed
    restarted: bool  # this scrape showed a counter reset (server restart)
    snapshot: Snapshot | None
    live: Live | None
    device_util: Quantity  # GPU utilisation (NVML) or the server process's CPU use
    device_util_kind: str  # "gpu" | "cpu" | "none"
    reading: str

    def to_json(self) -> dict[str, Any]:
        return {
            "record": "frame",
            "t_unix_s": self.t_unix_s,
            "t_mono_s": self.t_mono_s,
            "up": self.up,
            "down_since_unix_s": self.down_since_unix_s,
            "error": self.error,
            "restarted": self.restarted,
            "snapshot": self.snapshot.to_json() if self.snapshot else None,
            "live": self.live.to_json() if self.live else None,
            "device_util": self.device_util.to_json(),
            "device_util_kind": self.device_util_kind,
            "reading": self.reading,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Frame:
        return cls(
            t_unix_s=d["t_unix_s"],
            t_mono_s=d["t_mono_s"],
            up=d["up"],
            down_since_unix_s=d.get("down_since_unix_s"),
            error=d.get("error"),
            restarted=d.get("restarted", False),
            snapshot=Snapshot.from_json(d["snapshot"]) if d.get("snapshot") else None,
            live=Live.from_json(d["live"]) if d.get("live") else None,
            device_util=Quantity.from_json(d["device_util"]),
            device_util_kind=d.get("device_util_kind", "none"),
            reading=d.get("reading", ""),
        )


def _pct(q: Quantity) -> str:
    if q.value is None:
        return "?"
    return f"{q.value:.0%}" if abs(q.value) >= 0.1 else f"{q.value:.1%}"


def reading(live: Live | None, util: Quantity, util_kind: str) -> str:
    """The one line a dashboard reader needs: which wall the server is against, and what helps."""
    if live is None:
        return "waiting for a second scrape"
    mbu, mfu = live.mbu, live.mfu
    if mbu.value is None:
        return "MBU " + mbu.basis
    if live.steps_per_s.value == 0:
        return "idle: no engine steps in the window"
    busy = ""
    if util.value is not None:
        what = "GPU util" if util_kind == "gpu" else "server CPU"
        busy = f" (while {what} reads {_pct(util)})"
    lb = " at least" if "lower bound" in mbu.basis else ""
    v = live_verdict(live)
    if v is not None and (v.where != "floor" or live.engine_step_s.value is not None):
        far = live.above_floor.value
        return (
            f"{v.sentence()};{lb} {_pct(mbu)} of peak bandwidth, {_pct(mfu)} of peak FLOPS"
            f"{busy}" + (f", {far:.1f}x above the floor" if far is not None else "")
        )
    if live.floor_bound == "compute":
        return (
            f"compute-bound: {_pct(mfu)} of peak FLOPS,{lb} {_pct(mbu)} of peak bandwidth{busy}"
            " — a bigger batch will not help; more FLOPS or lower-precision compute will"
        )
    return (
        f"memory-bound:{lb} {_pct(mbu)} of peak bandwidth, {_pct(mfu)} of peak FLOPS{busy}"
        " — more GPUs will not help; batch more or quantise"
    )


def live_verdict(live: Live) -> Verdict | None:
    """The one verdict (metrics/verdict.py) from the window's numbers: the measured step,
    its floor, the engine alone at the running batch and the engine's growth."""
    served = live.measured_step_s.value
    if not served:
        return None
    g = live.engine_growth
    numbers = TimeNumbers(
        served,
        live.floor_step_s.value,
        live.engine_step_s.value,
        g.value,
        g.basis if g.value is not None else "",
    )
    return decide(numbers)


Scrape = Callable[[], Snapshot]
UtilProbe = Callable[[], tuple[Quantity, str]]


class Watcher:
    """Scrape once per tick; keep the window; turn failures into 'down since' frames."""

    def __init__(self, scrape: Scrape, physics: Floor, window_s: float, util: UtilProbe):
        self.scrape = scrape
        self.physics = physics
        self.window = SnapshotWindow(window_s)
        self.util = util
        self.down_since: float | None = None

    def tick(self) -> Frame:
        t_unix, t_mono = time.time(), time.perf_counter()  # the scraper's clock
        util, kind = self.util()
        try:
            snap = self.scrape()
        except InferlabError as e:
            if self.down_since is None:
                self.down_since = t_unix
            self.window.clear()  # no rate may span the outage
            return Frame(
                t_unix, t_mono, False, self.down_since, str(e), False, None, None, util, kind,
                f"down since {time.strftime('%H:%M:%S', time.localtime(self.down_since))}: {e}",
            )  # fmt: skip
        self.down_since = None
        restarted = self.window.add(snap)
        live = derive(self.window.snapshots, self.physics)
        return Frame(
            snap.t_unix_s, snap.t_mono_s, True, None, None, restarted, snap, live, util, kind,
            reading(live, util, kind),
        )  # fmt: skip
