"""The machine beside the sweep, in words: the drift canary (its speed at rest, how far it
moved, which levels drifted, and with the machine canary beside it, whether the machine
or the server moved) and, per level, the host's CPU steal time beside the client's
own CPU use. Nothing for a run that has neither (a simulation, a file written before)."""

from __future__ import annotations

from inferlab.metrics.machine_verdict import verdict_of, verdict_words
from inferlab.summary import Canary, LevelSummary, RunSummary


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def _canary_line(c: Canary) -> str:
    rest = "-" if c.rest_tpot_ms is None else f"{c.rest_tpot_ms:.1f} ms"
    spread = "" if c.rest_spread is None else f" (spread {_pct(c.rest_spread)})"
    after = [r.tpot_ms for r in c.readings if r.tpot_ms is not None and not r.at_rest]
    span = f", after the levels {min(after):.1f}-{max(after):.1f} ms" if after else ""
    slot = "" if c.slot is None else f" on slot {c.slot}"
    failed = sum(1 for r in c.readings if r.tpot_ms is None)
    lost = f"; {failed} of {len(c.readings)} readings failed" if failed else ""
    return (
        f"drift canary ({c.output_tokens} tokens{slot}): TPOT at rest {rest}{spread}{span}"
        f"{lost}; machine_drift beyond {_pct(c.drift_threshold)} (max(3 x spread, 5 %))"
    )


def _drift_line(summary: RunSummary) -> str:
    if summary.canary is None or summary.canary.rest_tpot_ms is None:
        return "machine_drift: not judged (no canary reading at rest)"
    drifted = [w.level for w in summary.warnings if w.code == "machine_drift"]
    if not drifted:
        return "machine_drift: no level ran while the canary moved beyond its noise"
    return f"machine_drift: {', '.join(drifted)} (the warnings say by how much)"


def _host_cell(lv: LevelSummary) -> str:
    steal = "-" if lv.host is None else _pct(lv.host.cpu_steal_fraction)
    cpu = "-" if lv.client is None else f"{lv.client.cpu_fraction * 100:.0f} %"
    return f"{lv.label} {steal} / {cpu}"


def canary_lines(summary: RunSummary) -> list[str]:
    """The canary's line and its verdict, and the per-level steal / client CPU line."""
    out: list[str] = []
    if summary.canary is not None:
        out += [_canary_line(summary.canary), _drift_line(summary)]
        which = verdict_of(summary.canary)
        if which is not None:  # the machine canary beside it (bench/machine_canary.py)
            out.append(f"over the run, at rest against after the levels: {verdict_words(which)}")
    if summary.canary is not None or any(lv.host for lv in summary.levels):
        cells = ", ".join(_host_cell(lv) for lv in summary.levels)
        out.append(f"host CPU steal / the client's own CPU (of one core), per level: {cells}")
    return out
