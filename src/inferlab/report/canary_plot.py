"""canary.png: the drift canary's TPOT over the run (the machine's speed), each level's
stretch of time marked between the readings around it, the band of no drift shaded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inferlab.summary import Canary, RunSummary


@dataclass(frozen=True, slots=True)
class LevelSpan:
    """One level run's stretch of the run: from the canary before it to the one after."""

    label: str
    start_s: float
    end_s: float | None  # None: no canary after it (the run stopped)


def level_spans(c: Canary) -> list[LevelSpan]:
    """Each level run between the last reading that preceded it and the next reading."""
    rs = c.readings
    spans = []
    for i, r in enumerate(rs):
        nxt = rs[i + 1] if i + 1 < len(rs) else None
        last_before = nxt is None or (nxt.before, nxt.repeat, nxt.at_rest) != (
            r.before,
            r.repeat,
            r.at_rest,
        )
        if r.before is not None and last_before:
            spans.append(LevelSpan(r.before, r.at_s, nxt.at_s if nxt is not None else None))
    return spans


def canary_series(summary: RunSummary, path: Path) -> Path | None:
    """The canary's TPOT against time, rest readings apart, levels marked (machine_drift
    ones in red); None for a run without canary readings."""
    c = summary.canary
    # (when, TPOT ms, at rest) of every reading that has a TPOT (a failed one has none)
    pts = [(r.at_s, t, r.at_rest) for r in c.readings if (t := r.tpot_ms)] if c else []
    if c is None or not pts:
        return None
    import matplotlib

    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6))
    drifted = {w.level for w in summary.warnings if w.code == "machine_drift"}
    top = max(t for _, t, _ in pts)
    for k, span in enumerate(level_spans(c)):
        end = span.end_s if span.end_s is not None else max(x for x, _, _ in pts)
        ax.axvspan(span.start_s, end, color="0.93" if k % 2 else "0.86", zorder=0)
        color = "tab:red" if span.label in drifted else "0.3"
        ax.text((span.start_s + end) / 2, top * 1.05, span.label, ha="center", va="bottom",
                fontsize=7, color=color)  # fmt: skip
    if c.rest_tpot_ms is not None:
        lo, hi = (c.rest_tpot_ms * (1 + s * c.drift_threshold) for s in (-1, 1))
        ax.axhspan(lo, hi, color="tab:green", alpha=0.12, label="no drift (rest +- threshold)")
        ax.axhline(c.rest_tpot_ms, color="tab:green", lw=0.8)
    for rest, style, color, name in (
        (True, "s", "tab:green", "at rest (its noise)"),
        (False, "o-", "tab:blue", "after each level"),
    ):
        xs = [(x, t) for x, t, at_rest in pts if at_rest == rest]
        ax.plot([x for x, _ in xs], [t for _, t in xs], style, color=color, label=name)
    ax.set_ylim(0, top * 1.15)  # from 0: a move reads at its true size
    ax.set_xlabel("time since the run began (s)")
    ax.set_ylabel(f"canary TPOT (ms, {c.output_tokens} tokens)")
    ax.set_title("The machine's speed over the run (drift canary); red: machine_drift")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
