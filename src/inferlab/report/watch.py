"""A recorded `watch` rendered: MBU/MFU and tok/s over time, the step time against the floor.

`inferlab report DIR` calls this for a folder holding a `watch --record` file
(alone, or beside a bench run's summary.json as the demo leaves it). Output:
watch.png and a self-contained watch.html (the PNG inlined, no scripts).
"""

from __future__ import annotations

import base64
import html
import statistics
from pathlib import Path

from inferlab.watch.derive import Quantity
from inferlab.watch.frame import Frame
from inferlab.watch.record import Header, is_watch_record, read_record

PREFERRED = "watch.jsonl"


def find_watch_record(d: Path) -> Path | None:
    """DIR/watch.jsonl, else the first *.jsonl in DIR whose first line is a watch header."""
    if (d / PREFERRED).is_file() and is_watch_record(d / PREFERRED):
        return d / PREFERRED
    for p in sorted(d.glob("*.jsonl")):
        if is_watch_record(p):
            return p
    return None


def _series(frames: list[Frame], name: str, scale: float = 1.0) -> list[float]:
    out = []
    for f in frames:
        q: Quantity | None = getattr(f.live, name) if f.live is not None else None
        out.append(q.value * scale if q is not None and q.value is not None else float("nan"))
    return out


def plot_watch(header: Header, frames: list[Frame], path: Path) -> Path:
    """Three panels sharing time: MBU/MFU (%), tokens/s, measured step vs the floor (ms)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = frames[0].t_unix_s if frames else 0.0
    t = [f.t_unix_s - t0 for f in frames]
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    a1.plot(t, _series(frames, "mbu", 100), label="MBU", color="#3566a8")
    a1.plot(t, _series(frames, "mfu", 100), label="MFU", color="#c2571a")
    util = [f.device_util.value * 100 if f.device_util.value is not None else float("nan")
            for f in frames]  # fmt: skip
    kinds = {f.device_util_kind for f in frames}
    a1.plot(t, util, "--", color="#999", label="GPU util" if "gpu" in kinds else "server CPU")
    a1.set_ylabel("% of peak")
    fig.suptitle("How busy memory and compute really are (inferlab watch)", fontsize=11)
    a1.set_title(f"{header.model} on {header.hardware}"[:90], fontsize=9)
    a2.plot(t, _series(frames, "generated_tokens_per_s"), label="generated", color="#2d7d46")
    a2.plot(t, _series(frames, "prompt_tokens_per_s"), label="prompt", color="#8a5cc2")
    a2.set_ylabel("tokens/s")
    a3.plot(t, _series(frames, "measured_step_s", 1e3), label="measured step", color="#2d7d46")
    a3.plot(t, _series(frames, "floor_step_s", 1e3), "k--", label="floor (roofline)")
    a3.plot(t, _series(frames, "itl_p50_s", 1e3), label="TPOT p50 (server)", color="#3566a8")
    a3.set_ylabel("ms")
    a3.set_xlabel("seconds since the first frame")
    down = [x for x, f in zip(t, frames, strict=True) if not f.up]
    for ax in (a1, a2, a3):
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
        for x in down:
            ax.axvspan(x - header.interval_s / 2, x + header.interval_s / 2, color="#f4c7c3")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _median(frames: list[Frame], name: str) -> float | None:
    vals = [v for v in _series(frames, name) if v == v]  # NaN != NaN
    return statistics.median(vals) if vals else None


def summary_lines(header: Header, frames: list[Frame]) -> list[str]:
    """A few lines for the console and the page: medians over the frames that had a value."""
    up = [f for f in frames if f.up]
    span = frames[-1].t_unix_s - frames[0].t_unix_s if frames else 0.0
    lines = [
        f"watch of {header.url}: {len(frames)} frames over {span:.0f} s "
        f"({len(frames) - len(up)} while the server was down); "
        f"{header.model} on {header.hardware}",
        f"the watch's own figures: medians over its frames (one every {header.interval_s:g} s, "
        f"each a rate over the last {header.window_s:g} s, idle moments included), not a "
        "level's figures",
    ]
    for name, label, scale, unit in (
        ("mbu", "MBU", 100, "%"),
        ("mfu", "MFU", 100, "%"),
        ("generated_tokens_per_s", "generated", 1, " tok/s"),
        ("steps_per_s", "engine steps", 1, "/s"),
        ("measured_step_s", "step", 1e3, " ms"),
        ("floor_step_s", "floor step", 1e3, " ms"),
    ):
        m = _median(up, name)
        lines.append(f"median {label}: " + (f"{m * scale:.4g}{unit}" if m is not None else "?"))
    readings = [f.reading for f in up if f.live is not None and f.live.mbu.value]
    if readings:
        lines.append(f"last reading (its final {header.window_s:g} s window): " + readings[-1])
    return lines


def render_watch(d: Path, record: Path | None = None) -> Path:
    """watch.png + watch.html for the recorded watch in folder `d`; returns the page's path."""
    record = record or find_watch_record(d)
    if record is None:
        raise FileNotFoundError(d)
    header, frames = read_record(record)
    png = plot_watch(header, frames, d / "watch.png")
    data = base64.b64encode(png.read_bytes()).decode()
    items = "".join(f"<li>{html.escape(s)}</li>" for s in summary_lines(header, frames))
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>inferlab watch</title>
<style>body{{font-family:system-ui,sans-serif;max-width:900px;margin:2em auto;color:#222}}
img{{max-width:100%}}</style></head><body><h1>inferlab watch: MBU and MFU over time</h1>
<p><code>{html.escape(str(record))}</code></p><ul>{items}</ul>
<img alt="MBU, MFU, tokens/s and step time over time" src="data:image/png;base64,{data}">
</body></html>"""
    out = d / "watch.html"
    out.write_text(page, encoding="utf-8")
    return out
