"""The Grafana dashboard in contrib/ plots every gauge the exporter publishes."""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.watch.exporter import GAUGES

DASHBOARD = Path(__file__).parents[2] / "contrib" / "grafana" / "inferlab-watch.json"


def test_dashboard_plots_every_inferlab_gauge_beside_engine_series() -> None:
    d = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
    for name in GAUGES:
        assert any(name in e for e in exprs), name
    assert any(e.startswith("vllm:") or "(vllm:" in e for e in exprs)
    assert any("llamacpp:" in e for e in exprs)
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
