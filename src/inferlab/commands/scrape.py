"""`inferlab scrape`: one /metrics snapshot of a server, normalised across engines."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from inferlab.commands.flags.argtypes import TIME
from inferlab.commands.flags.output import table

if TYPE_CHECKING:  # the snapshot module loads when the verb runs
    from inferlab.servermetrics.snapshot import Histogram, Snapshot


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("scrape", help="read a server's /metrics once, normalised across engines")
    p.add_argument(
        "--url", required=True, help="server root, OpenAI /v1 base, or the /metrics URL itself"
    )
    p.add_argument("--timeout", type=TIME, default=5.0, help="give up after this long (5s)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def _fmt(name: str, v: float | None) -> str:
    if v is None:
        return "- (not published)"
    if name == "kv_cache_usage":
        return f"{v:.1%}"
    if name.startswith("estimated_"):
        return f"{v:.4g}"
    return f"{v:g}"


def _hist(h: Histogram | None) -> str:
    if h is None:
        return "- (not published)"
    q = [h.quantile(p) for p in (0.5, 0.9, 0.99)]
    qs = " / ".join("-" if x is None else f"{x * 1e3:.1f}" for x in q)
    return f"{h.count:g} observations, p50/p90/p99 {qs} ms (bucket-interpolated)"


def snapshot_rows(snap: Snapshot) -> list[tuple[str, str]]:
    from dataclasses import fields

    from inferlab.servermetrics.snapshot import HISTOGRAMS

    rows: list[tuple[str, str]] = [("dialect", snap.dialect)]
    for f in fields(snap):
        if f.name in ("dialect", "t_mono_s", "t_unix_s"):
            continue
        v = getattr(snap, f.name)
        rows.append((f.name, _hist(v) if f.name in HISTOGRAMS else _fmt(f.name, v)))
    return rows


def quantiles(snap: Snapshot) -> dict[str, dict[str, float | None]]:
    from inferlab.servermetrics.snapshot import HISTOGRAMS

    out: dict[str, dict[str, float | None]] = {}
    for name in HISTOGRAMS:
        h = getattr(snap, name)
        if h is not None:
            out[name] = {f"p{int(q * 100)}": h.quantile(q) for q in (0.5, 0.9, 0.99)}
    return out


def run(args: argparse.Namespace) -> int:
    from inferlab import jsonio
    from inferlab.address import metrics_url
    from inferlab.servermetrics.scrape import scrape_once

    url = metrics_url(args.url)
    snap = scrape_once(url, args.timeout)  # a MetricsError is an InferlabError: exit 2, one line
    if args.json:
        print(
            jsonio.dumps(
                {"metrics_url": url, "snapshot": snap.to_json(), "quantiles": quantiles(snap)}
            )
        )
        return 0
    when = time.strftime("%H:%M:%S", time.localtime(snap.t_unix_s))
    print(f"{url} at {when} (counters are totals since the server started)")
    print("\n".join(table(snapshot_rows(snap))))
    return 0
