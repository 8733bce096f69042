"""Request by request, run A against run B: where a prediction parted from the server.

`report SIM MEASURED` on the same request specs (a trace, an open loop: the simulator and
bench send the same requests, by id, at the same instants) pairs each measured request
of a level with its namesake in the other run and plots both runs' TTFT and TPOT
against the request's scheduled instant (per_request.png, in compare.html). A level's
p50 says how far apart two runs are; this says which requests, and when: a burst that
queued on the server and not in the prediction, one long prompt that stalled every
stream behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.records import RequestRecord, read_records

if TYPE_CHECKING:
    from matplotlib.axes import Axes

NS = 1e-9


@dataclass(frozen=True, slots=True)
class RequestPair:
    """One request in both runs: its level, its scheduled instant in the level (s, run
    B's clock), and each run's TTFT and TPOT (s; TPOT None for a one-token reply)."""

    level: str
    request_id: int
    at_s: float
    ttft_a_s: float
    ttft_b_s: float
    tpot_a_s: float | None
    tpot_b_s: float | None


def _ttft_s(r: RequestRecord) -> float:
    return (r.event_ns[0] - r.send_ns) * NS


def _tpot_s(r: RequestRecord) -> float | None:
    n = r.n_out
    return (r.event_ns[-1] - r.event_ns[0]) * NS / (n - 1) if n > 1 else None


def _measured(records: list[RequestRecord]) -> dict[tuple[str, int], RequestRecord]:
    return {
        (r.level, r.request_id): r for r in records if r.phase == "measure" and r.ok and r.event_ns
    }


def pair_requests(a: list[RequestRecord], b: list[RequestRecord]) -> list[RequestPair]:
    """The requests both runs measured, by level and id, in the order B scheduled them;
    each level's instants from its first request's (so a level starts at 0)."""
    ma, mb = _measured(a), _measured(b)
    both = sorted((k for k in mb if k in ma), key=lambda k: mb[k].scheduled_ns)
    starts: dict[str, int] = {}
    for level, i in both:
        starts.setdefault(level, mb[(level, i)].scheduled_ns)
    return [
        RequestPair(
            level=level,
            request_id=i,
            at_s=(mb[(level, i)].scheduled_ns - starts[level]) * NS,
            ttft_a_s=_ttft_s(ma[(level, i)]),
            ttft_b_s=_ttft_s(mb[(level, i)]),
            tpot_a_s=_tpot_s(ma[(level, i)]),
            tpot_b_s=_tpot_s(mb[(level, i)]),
        )
        for level, i in both
    ]


def folder_pairs(folder_a: Path, folder_b: Path) -> list[RequestPair]:
    """pair_requests over two run folders' records.jsonl ([] where either has none)."""
    paths = (folder_a / "records.jsonl", folder_b / "records.jsonl")
    if not all(p.is_file() for p in paths):
        return []
    return pair_requests(read_records(paths[0]), read_records(paths[1]))


def open_loop(pairs: list[RequestPair]) -> bool:
    """Whether the pairs are worth a plot: requests scheduled at instants of their own (an
    open loop or a trace), not a closed loop's (all at 0: a closed loop has no schedule)."""
    return len(pairs) >= 2 and len({p.at_s for p in pairs}) > 1


def plot_per_request(pairs: list[RequestPair], names: tuple[str, str], path: Path) -> Path:
    """TTFT (top) and TPOT (bottom) of every paired request against its scheduled instant:
    run A hollow, run B filled, a line from one to the other, one colour per level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    levels = list(dict.fromkeys(p.level for p in pairs))
    for k, level in enumerate(levels):
        mine = [p for p in pairs if p.level == level]
        colour = f"C{k % 10}"
        rows: tuple[list[tuple[float, float, float]], ...] = (
            [(p.at_s, p.ttft_a_s, p.ttft_b_s) for p in mine],
            [(p.at_s, a, b) for p in mine if (a := p.tpot_a_s) and (b := p.tpot_b_s)],
        )
        for ax, row in zip(axes, rows, strict=True):
            _draw(ax, row, colour, level if len(levels) > 1 else "")
    _label(axes, names)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _draw(ax: Axes, row: Sequence[tuple[float, float, float]], colour: str, level: str) -> None:
    """One level's requests on one panel: A hollow, B filled, joined (values in ms)."""
    for at, va, vb in row:
        ax.plot([at, at], [va * 1e3, vb * 1e3], color=colour, lw=0.8, alpha=0.6)
    at_s = [r[0] for r in row]
    ax.scatter(at_s, [r[1] * 1e3 for r in row], facecolors="none", edgecolors=colour, s=28)
    ax.scatter(at_s, [r[2] * 1e3 for r in row], color=colour, s=18, label=level or None)


def _label(axes: Sequence[Axes], names: tuple[str, str]) -> None:
    top, bottom = axes
    top.set_ylabel("TTFT (ms)")
    bottom.set_ylabel("TPOT (ms)")
    bottom.set_xlabel("scheduled instant in the level (s)")
    top.set_title(f"per request: A {names[0]} (hollow) against B {names[1]} (filled)")
    from matplotlib.ticker import FuncFormatter, NullFormatter

    for ax in (top, bottom):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda ms, _: f"{ms:g}"))  # plain ms
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="major", alpha=0.3)
    if top.get_legend_handles_labels()[0]:
        top.legend(fontsize=8)
