"""report.html: one self-contained file (PNGs inlined as data URIs, no CDN, no scripts)."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from inferlab.jsonio import dumps
from inferlab.report.console import slo_lines, sweep_rows
from inferlab.report.interval_text import interval_lines
from inferlab.summary import RunSummary

CSS = """
body{font-family:system-ui,sans-serif;max-width:1300px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3} td:first-child,th:first-child{text-align:left}
.error{color:#b00}.warning{color:#a60}.info{color:#666}
img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
code,pre{background:#f6f6f6;padding:2px 4px}
pre{padding:8px;overflow-x:auto}
.wide{overflow-x:auto} .wide table{font-size:0.76em} .wide th,.wide td{padding:3px 4px}
"""


def _sweep_tables(head: list[str], rows: list[list[str]]) -> str:
    """The sweep as two tables that fit the page: what the client measured, then what the
    server counted (its `srv` columns), each row led by its level."""
    srv = [i for i, h in enumerate(head) if h.startswith("srv ")]
    if not srv:
        return _table(head, rows)
    own = [i for i in range(len(head)) if i not in srv]
    measured = _table(_columns(own, head), [_columns(own, r) for r in rows])
    server = _table(_columns([0, *srv], head), [_columns([0, *srv], r) for r in rows])
    return f"{measured}<p>What the server itself counted (its /metrics):</p>{server}"


def _columns(cols: list[int], row: list[str]) -> list[str]:
    return [row[i] for i in cols]


def _table(head: list[str], rows: list[list[str]]) -> str:
    """A wide table, smaller type, that fits the page (and scrolls, never cut, if narrower)."""
    out = "<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
    for r in rows:
        out += "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
    return f'<div class="wide">{out}</table></div>'


def img(path: Path) -> str:
    """A PNG inlined in the page (base64), or nothing where it was not written."""
    if not path.exists():
        return ""
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'


def _time_split(out_dir: Path) -> str:
    pic = img(out_dir / "time_split.png")
    return f"<h2>Where the time goes: floor, engine alone, served</h2>{pic}" if pic else ""


def _kv_table(rows: list[tuple[str, str]]) -> str:
    body = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _server_section(out_dir: Path) -> str:
    pic = img(out_dir / "server.png")
    if not pic:
        return ""
    return (
        "<h2>The server's own view (its /metrics)</h2><p>Running and waiting requests and "
        "KV use as the engine counted them; grey lines mark where each level began.</p>" + pic
    )


def _canary_section(summary: RunSummary, out_dir: Path) -> str:
    """The drift canary: the machine's speed over the run, the levels that drifted, and
    each level's CPU steal time beside the client's own CPU."""
    from inferlab.report.canary_text import canary_lines

    lines = canary_lines(summary)
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    head = "<h2>The machine's speed over the run (drift canary)</h2>"
    return f"{head}<ul>{items}</ul>{img(out_dir / 'canary.png')}"


def _slo_section(summary: RunSummary, out_dir: Path) -> str:
    """With --slo: goodput and attainment against load, and what the SLO columns mean."""
    lines = slo_lines(summary)
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f"<h2>Within the SLO: goodput and attainment</h2><ul>{items}</ul>" + img(
        out_dir / "goodput.png"
    )


def _predicted_section(summary: RunSummary, out_dir: Path) -> str:
    """Predicted before measuring, beside what was measured, with the error of each."""
    from inferlab.report.predicted import band_lines, prediction_rows, preemption_lines

    head, rows = prediction_rows(summary)
    if not rows:
        return ""
    table = _table(head, rows)
    source = next(lv.predicted.source for lv in summary.levels if lv.predicted)
    return (
        "<h2>Predicted before measuring, and measured</h2>"
        f"<p>Each level was predicted before it ran, from {html.escape(source)}. "
        "Error = (predicted - measured) / measured.</p>"
        + table
        + "".join(
            f"<p>{html.escape(line[0].upper() + line[1:])}.</p>"
            for line in (*band_lines(summary), *preemption_lines(summary))
        )
        + img(out_dir / "predicted_vs_measured.png")
    )


def peer_section(summary: RunSummary) -> str:
    """A peer's repeated benchmark (AIPerf --num-profile-runs): each run with its verdict,
    then inferlab's intervals beside the tool's (report/repeat_text.py); "" otherwise."""
    from inferlab.report.repeat_text import interval_table, repeat_notes, repeats_of, run_table

    block = repeats_of(summary)
    if block is None or not summary.levels:
        return ""
    why = "".join(
        f"<li>{html.escape(r.label)}: {html.escape(r.reason)}</li>" for r in block.runs if r.reason
    )
    notes = "".join(f"<p>{html.escape(x)}</p>" for x in repeat_notes(summary, block))
    return (
        f"<h3>Its {len(block.runs)} runs, each read from its own records</h3>"
        f"{_table(*run_table(block))}<ul>{why}</ul>"
        "<h3>95 % intervals: inferlab's (bootstrap over the records) beside the tool's</h3>"
        f"{_table(*interval_table(summary, block))}{notes}"
    )


def render_html(
    summary: RunSummary, out_dir: Path, reading: list[str], facts: list[tuple[str, str]]
) -> Path:
    head, rows = sweep_rows(summary)
    table = _sweep_tables(head, rows)
    table += "".join(f"<p>{html.escape(x)}</p>" for x in interval_lines(summary))
    warns = "".join(
        f'<li class="{w.severity}"><b>{html.escape(w.code)}</b> ({html.escape(w.level)})'
        f": {html.escape(w.message)}</li>"
        for w in summary.warnings
    )
    cmd = " ".join(summary.command)
    raw = html.escape(dumps(summary, indent=1)[:200_000])
    watch = out_dir / "watch.png"  # a recorded `inferlab watch` beside the run (the demo's)
    watch_html = (
        "<h2>MBU and MFU over time (watch)</h2><p>The watch's own figures: each point a rate "
        "over its last few seconds, idle moments included; not a level's figures above.</p>"
        f"{img(watch)}"
        if watch.exists()
        else ""
    )
    doc = f"""<!doctype html><html><head><meta charset="utf-8">
<title>inferlab report</title><style>{CSS}</style></head><body>
<h1>inferlab: the decode phase, measured</h1>
<p><code>{html.escape(cmd)}</code></p>
<h2>What it says</h2><ul>{"".join(f"<li>{html.escape(s)}</li>" for s in reading)}</ul>
<h2>Sweep</h2>{table}
<h2>Throughput vs time per token, beside the roofline floor</h2>
{img(out_dir / "throughput_vs_tpot.png")}
<h2>Inter-token gaps and their tail</h2>{img(out_dir / "gap_cdf.png")}
<h2>MBU per level</h2>{img(out_dir / "mbu.png")}
{watch_html}
{_server_section(out_dir)}
{_time_split(out_dir)}
{_canary_section(summary, out_dir)}
{_slo_section(summary, out_dir)}
{_predicted_section(summary, out_dir)}
<h2>Warnings</h2><ul>{warns or "<li>none</li>"}</ul>
<h2>Setup, floor and versions</h2>{_kv_table(facts)}
<details><summary>summary.json</summary><pre>{raw}</pre></details></body></html>"""
    path = out_dir / "report.html"
    path.write_text(doc, encoding="utf-8")
    return path
