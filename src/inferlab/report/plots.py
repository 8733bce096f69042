"""PNG plots of a sweep (matplotlib imported lazily, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.metrics.requests import latency
from inferlab.records import RequestRecord
from inferlab.summary import LevelSummary, RunSummary

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from inferlab.servermetrics.sampler import Sample
    from inferlab.specs.cost import ModelCost
    from inferlab.specs.hardware import HardwareSpec


def _agg() -> None:
    """Draw to files only (no window): set before pyplot is imported."""
    import matplotlib

    matplotlib.use("Agg")


def gaps_by_level(records: list[RequestRecord]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in records:
        if r.phase != "measure":
            continue
        lat = latency(r)
        if lat is not None:
            out.setdefault(r.level, []).extend(lat.gaps_s)
    return out


# One series per kind of load (vocab.LevelKind): a line joins only levels of one kind.
SERIES = (
    ("concurrency", "o-", "closed loop, c streams (TPOT p50)"),
    ("rate", "s-", "open loop, rate req/s (TPOT p50)"),
    ("trace", "^", "trace replay (TPOT p50)"),
)


def _series_kind(lv: LevelSummary) -> str:
    """A replayed trace states its offered rate, as an open loop does; its label says trace."""
    return "trace" if lv.label == "trace" else lv.kind


def interval_bars(
    levels: list[LevelSummary], quantity: str, scale: float
) -> tuple[list[int], list[float], list[float]]:
    """Of `levels`, the indices of those with a 95 % interval of `quantity` (summary's
    `uncertainty`), and how far each reaches below and above the value, x `scale`. A level
    without one (a summary written before intervals) gets no bar."""
    index, below, above = [], [], []
    for i, lv in enumerate(levels):
        iv = lv.uncertainty.of(quantity) if lv.uncertainty is not None else None
        if iv is not None:
            index.append(i)
            below.append((iv.value - iv.ci95[0]) * scale)
            above.append((iv.ci95[-1] - iv.value) * scale)
    return index, below, above


def _draw_bars(ax: Axes, xs: list[float], ys: list[float], lvs: list[LevelSummary]) -> None:
    """Each point's interval: TPOT p50's across, throughput's (with repeats) up and down."""
    color = ax.lines[-1].get_color()
    # the quantities as metrics/repeats.py names them
    for quantity, scale, across in (
        ("tpot_s.p50", 1e3, True),
        ("output_tokens_per_s_total", 1.0, False),
    ):
        idx, below, above = interval_bars(lvs, quantity, scale)
        if not idx:
            continue
        bars = [below, above]
        x, y = [xs[i] for i in idx], [ys[i] for i in idx]
        ax.errorbar(
            x,
            y,
            xerr=bars if across else None,
            yerr=None if across else bars,
            fmt="none",
            ecolor=color,
            elinewidth=1,
            capsize=3,
        )


def throughput_vs_tpot(
    summary: RunSummary, predicted: list[tuple[int, float, float]], path: Path
) -> Path:
    """Aggregate tok/s against per-user time per token; `predicted` = (batch, step_s, tok/s).
    A point with a 95 % interval carries it as an error bar (none on older summaries)."""
    _agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for kind, style, name in SERIES:  # closed loops, open loops and traces are not one sweep
        lvs = [
            lv
            for lv in sorted(summary.levels, key=lambda lv: lv.value)  # a search: unsorted
            if lv.tpot_s.p50 and _series_kind(lv) == kind
        ]
        if not lvs:
            continue
        xs = [(lv.tpot_s.p50 or 0.0) * 1e3 for lv in lvs]
        ys = [lv.output_tokens_per_s_total for lv in lvs]
        ax.plot(xs, ys, style, label=name)
        _draw_bars(ax, xs, ys, lvs)
        for x, y, lv in zip(xs, ys, lvs, strict=True):
            ax.annotate(lv.label, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    if predicted:
        ax.plot(
            [s * 1e3 for _, s, _ in predicted],
            [t for _, _, t in predicted],
            "--",
            color="gray",
            label="roofline floor (predicted)",
        )
        for b, s, t in predicted:
            ax.annotate(
                f"b={b}",
                (s * 1e3, t),
                fontsize=7,
                color="gray",
                textcoords="offset points",
                xytext=(3, -10),
            )
    ax.set_xlabel("time per output token per user (ms)")
    ax.set_ylabel("aggregate output tokens/s (log)")
    ax.set_yscale("log")  # the floor and a CPU server can sit an order of magnitude apart
    ax.set_title("Throughput vs per-user latency across the sweep")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # a run whose levels have no TPOT draws nothing
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def compare_runs(summaries: list[tuple[str, RunSummary]], path: Path) -> Path:
    """Several runs (measured or simulated) on one throughput-vs-latency chart."""
    _agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, summary in summaries:
        pts = [
            (lv.tpot_s.p50 * 1e3, lv.output_tokens_per_s_total)
            for lv in summary.levels
            if lv.tpot_s.p50
        ]
        style = "s--" if summary.simulated else "o-"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=name)
    ax.set_xlabel("time per output token per user (ms)")
    ax.set_ylabel("aggregate output tokens/s")
    ax.set_title("Runs side by side (dashed: simulated)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _label_ms(ax: Axes) -> None:
    """Plain ms on a log x axis, and no label on a minor tick: matplotlib labels minor ticks
    where the gaps span under a decade or two (2x10^1, 3x10^1, ...), and they run into each
    other (issue 45). The ticks: decades past two decades, 1-2-5 steps down to one, and
    under a decade (where a log axis is nearly linear) plain steps, so that at least two
    ticks fall inside the axis however narrow the gaps."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    lo_ms, hi_ms = ax.get_xlim()
    if hi_ms / lo_ms > 100:
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0,)))
    elif hi_ms / lo_ms >= 10:
        ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 5, 10]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda ms, _: f"{ms:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def gap_cdf(gaps: dict[str, list[float]], path: Path) -> Path:
    """CDF of inter-token gaps (log x) and its tail P(gap > x) (log-log), one line per level."""
    import numpy as np

    _agg()
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, g in gaps.items():
        x = np.sort(np.asarray(g)) * 1e3
        x = x[x > 0]  # tokens read in one instant: no gap a log axis can show
        if not len(x):
            continue
        y = np.arange(1, len(x) + 1) / len(x)
        ax1.plot(x, y, label=label)
        ax2.plot(x, 1 - y + 1 / len(x), label=label)
    if ax1.lines:  # log axes need a positive gap to draw
        ax1.set_xscale("log")
        ax2.set_xscale("log")
        ax2.set_yscale("log")
        for ax in (ax1, ax2):
            _label_ms(ax)
    ax1.set_xlabel("inter-token gap (ms)")
    ax1.set_ylabel("fraction of gaps <= x")
    ax1.set_title("Gap distribution (CDF)")
    ax2.set_xlabel("inter-token gap (ms)")
    ax2.set_ylabel("fraction of gaps > x")
    ax2.set_title("Tail")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        if ax.lines:  # a run with no raw records has no gaps to draw
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def mbu_per_level(summary: RunSummary, path: Path) -> Path | None:
    levels = [
        (lv.label, lv.comparison.mbu)
        for lv in summary.levels
        if lv.comparison and lv.comparison.mbu is not None
    ]
    if not levels:
        return None
    _agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.bar([lab for lab, _ in levels], [mbu * 100 for _, mbu in levels], color="tab:blue")
    ax.set_ylabel("MBU (% of peak bandwidth)")
    ax.set_title("Memory-bandwidth utilisation per level")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def server_timeline(samples: list[Sample], path: Path) -> Path | None:
    """Running and waiting requests and KV use over the run, as the server counted them,
    with the levels' starts marked. `samples`: servermetrics.sampler.Sample, in file order."""
    good = sorted(
        ((s, s.snapshot) for s in samples if s.snapshot is not None), key=lambda p: p[1].t_mono_s
    )
    if not good:
        return None
    _agg()
    import matplotlib.pyplot as plt

    t0 = good[0][1].t_mono_s
    t = [snap.t_mono_s - t0 for _, snap in good]
    fig, ax = plt.subplots(figsize=(9, 4))
    for name, style in (("running", "-"), ("waiting", "--")):
        ys = [getattr(snap, name) for _, snap in good]
        if any(y is not None for y in ys):
            ax.step(
                t,
                [float("nan") if y is None else y for y in ys],
                style,
                where="post",
                label=f"{name} requests",
            )
    kv = [snap.kv_cache_usage for _, snap in good]
    if any(v is not None for v in kv):
        ax2 = ax.twinx()
        ax2.plot(
            t,
            [float("nan") if v is None else v * 100 for v in kv],
            color="tab:green",
            alpha=0.7,
            label="KV cache used (%)",
        )
        ax2.set_ylabel("KV cache used (%)")
        ax2.legend(loc="upper right", fontsize=8)
    for s, snap in good:
        if s.mark == "start":
            x = snap.t_mono_s - t0
            ax.axvline(x, color="gray", alpha=0.4, lw=0.8)
            ax.annotate(
                s.level,
                (x, 1),
                xycoords=("data", "axes fraction"),
                fontsize=7,
                xytext=(2, -10),
                textcoords="offset points",
                color="gray",
            )
    ax.set_xlabel("time since the first scrape (s)")
    ax.set_ylabel("requests")
    ax.set_title("The server's own view: batch, queue and KV use per level")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def time_split(summary: RunSummary, path: Path) -> Path | None:
    """Per level, a stacked bar: floor / kernels (engine - floor) / serving (served - engine)."""
    splits = [(lv.label, lv.engine) for lv in summary.levels if lv.engine is not None]
    if not splits:
        return None
    _agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    labels = [lab for lab, _ in splits]
    es = [e for _, e in splits]
    if all(e.floor_s is not None for e in es):
        parts = [
            ("floor (bytes / bandwidth)", [e.floor_s or 0.0 for e in es], "tab:green"),
            ("kernels (engine - floor)", [e.kernel_overhead_s or 0.0 for e in es], "tab:orange"),
        ]
    else:
        parts = [("engine alone", [e.engine_step_time_s for e in es], "tab:orange")]
    parts.append(("serving (served - engine)", [e.serving_overhead_s for e in es], "tab:blue"))
    base = [0.0] * len(es)
    for name, seconds, color in parts:
        # A negative part (two measurements disagree) is drawn as nothing: see the dots.
        h = [max(0.0, x) * 1e3 for x in seconds]
        ax.bar(labels, h, bottom=base, color=color, label=name)
        base = [b + x for b, x in zip(base, h, strict=True)]
    ax.errorbar(
        labels,
        [e.engine_step_time_s * 1e3 for e in es],
        yerr=[e.engine_noise_s * 1e3 for e in es],
        fmt="none",
        ecolor="dimgray",
        capsize=4,
        label="engine alone +- its noise",
    )
    ax.plot(labels, [e.served_tpot_s * 1e3 for e in es], "ko", label="served TPOT p50")
    ax.set_ylabel("time per output token (ms)")
    ax.set_title("Where the time goes: floor, engine kernels, serving")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def goodput_vs_load(summary: RunSummary, path: Path) -> Path | None:
    """Goodput (good requests/s) and attainment against the load, per level with --slo."""
    levels = sorted((lv for lv in summary.levels if lv.slo), key=lambda lv: lv.value)
    if not levels:
        return None
    if any(lv.kind == "concurrency" for lv in levels):  # one quantity on the x axis (the demo
        levels = [lv for lv in levels if lv.kind == "concurrency"]  # also has rate, trace)
    _agg()
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    x = [lv.value for lv in levels]
    goodput = [lv.slo.goodput_requests_per_s for lv in levels if lv.slo]
    ax.plot(x, goodput, "o-", color="tab:green", label="goodput (good requests/s)")
    for xi, yi, lv in zip(x, goodput, levels, strict=True):
        if lv.slo and not lv.slo.passed:
            ax.plot(xi, yi, "x", color="tab:red", markersize=10)
    ax.set_xlabel("requests/s offered" if levels[0].kind == "rate" else "concurrency")
    ax.set_ylabel("goodput, requests/s")
    ax.set_ylim(bottom=0)
    twin = ax.twinx()
    twin.plot(x, [lv.slo.attainment * 100 for lv in levels if lv.slo], "s--", color="tab:blue")
    twin.axhline(
        levels[0].slo.min_attainment * 100 if levels[0].slo else 90,
        color="tab:blue",
        lw=0.8,
        ls=":",
    )
    twin.set_ylabel("attainment, % of requests (blue; dotted: --min-attainment)")
    twin.set_ylim(0, 105)
    slo_text = levels[0].slo.slo if levels[0].slo else ""
    ax.set_title(f"Goodput and attainment vs load (x: level fails the SLO)\n{slo_text}")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def predicted_vs_measured(summary: RunSummary, path: Path) -> Path | None:
    """Per level, TPOT p50 and TTFT p50 as measured (solid) and as predicted before the
    level ran (hollow markers, dashed), with its band where it has one (the same
    prediction at the machine's speed +- the profile's spread: a bar)."""
    levels = [lv for lv in summary.levels if lv.predicted is not None]
    if not levels:
        return None
    _agg()
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    labels = [lv.label for lv in levels]
    x = list(range(len(levels)))
    panels = [
        ("TPOT p50 (ms)", 1e3, [lv.tpot_s.p50 for lv in levels], "tpot_s"),
        ("TTFT p50 (s)", 1.0, [lv.ttft_s.p50 for lv in levels], "ttft_s"),
    ]
    for ax, (name, k, measured, key) in zip(axes, panels, strict=True):
        pred = [getattr(lv.predicted, key).p50 for lv in levels]
        ax.plot(x, [_scaled(v, k) for v in measured], "o-", color="tab:blue", label="measured")
        ax.plot(
            x,
            [_scaled(v, k) for v in pred],
            "D--",
            color="tab:orange",
            markerfacecolor="none",
            label="predicted before measuring",
        )
        _band_bars(ax, x, levels, key, k)
        ax.set_xticks(x, labels, rotation=20, fontsize=8)
        ax.set_ylabel(name)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    held = all(lv.predicted and lv.predicted.held_out for lv in levels)
    fig.suptitle(
        "Predicted before measuring (the server's scheduler simulated) vs measured"
        + ("; every level held out" if held else "")
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _band_bars(ax: Axes, x: list[int], levels: list[LevelSummary], key: str, k: float) -> None:
    """Each prediction's band (low to high) as a bar through its point, where it has one."""
    rows = []
    for i, lv in zip(x, levels, strict=True):
        band = lv.predicted.band if lv.predicted else None
        r = getattr(band, key.replace("_s", "_p50_s")) if band else None
        if r is not None and r.low is not None and r.high is not None:
            rows.append((i, r.low * k, r.high * k))
    if not rows:
        return
    spread = next(
        lv.predicted.band.speed_spread for lv in levels if lv.predicted and lv.predicted.band
    )
    ax.vlines(
        [i for i, _, _ in rows],
        [lo for _, lo, _ in rows],
        [hi for _, _, hi in rows],
        color="tab:orange",
        alpha=0.5,
        linewidth=6,
        label=f"band: the machine's speed +-{spread:.0%}",
    )


def _scaled(v: float | None, k: float) -> float:
    return float("nan") if v is None else v * k


def predicted_curve(
    summary: RunSummary, cost: ModelCost, hw: HardwareSpec
) -> list[tuple[int, float, float]]:
    from inferlab.physics.decode import decode_point

    w = summary.workload
    ctx = int(w.prompt_tokens + w.output_tokens / 2)
    top = max([lv.comparison.floor_batch if lv.comparison else 1 for lv in summary.levels] + [1])
    batches = [b for b in (1, 2, 4, 8, 16, 32, 64, 128, 256) if b <= max(top * 2, 2)]
    return [
        (b, (p := decode_point(cost, hw, b, ctx)).step_time_s, p.tokens_per_s_total)
        for b in batches
    ]


def render_all(
    summary: RunSummary,
    records: list[RequestRecord],
    out_dir: Path,
    cost: ModelCost | None,
    hw: HardwareSpec | None,
) -> list[Path]:
    made = [gap_cdf(gaps_by_level(records), out_dir / "gap_cdf.png")]
    pred = predicted_curve(summary, cost, hw) if cost is not None and hw is not None else []
    made.append(throughput_vs_tpot(summary, pred, out_dir / "throughput_vs_tpot.png"))
    m = mbu_per_level(summary, out_dir / "mbu.png")
    if m:
        made.append(m)
    from inferlab.servermetrics.sampler import read_samples

    srv = server_timeline(read_samples(out_dir / "server_metrics.jsonl"), out_dir / "server.png")
    if srv:
        made.append(srv)
    split = time_split(summary, out_dir / "time_split.png")
    if split:
        made.append(split)
    good = goodput_vs_load(summary, out_dir / "goodput.png")
    if good:
        made.append(good)
    pvm = predicted_vs_measured(summary, out_dir / "predicted_vs_measured.png")
    if pvm:
        made.append(pvm)
    from inferlab.report.canary_plot import canary_series

    canary = canary_series(summary, out_dir / "canary.png")  # the machine's speed (bench)
    if canary:
        made.append(canary)
    return made
