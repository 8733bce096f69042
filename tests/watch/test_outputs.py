"""The exporter read by prometheus_client's parser; the record; the loop's Ctrl-C and duration."""

from __future__ import annotations

import io
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from inferlab.jsonio import loads_strict
from inferlab.servermetrics.dialects import MetricsError
from inferlab.servermetrics.snapshot import Snapshot
from inferlab.watch.exporter import Exporter
from inferlab.watch.frame import Watcher
from inferlab.watch.loop import WatchConfig, run_watch
from inferlab.watch.record import read_record
from tests.watch.helpers import FakeClock, physics, steady
from tests.watch.test_frame import Script, no_util


def scrape_exporter(port: int) -> dict[str, tuple[float, dict[str, str]]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[s.name] = (s.value, s.labels)
    return out


def test_exporter_gauges_parse_and_unknowns_are_absent() -> None:
    ex = Exporter(0, "smollm2", "this machine")
    try:
        w = Watcher(Script([steady(0), steady(10)]), physics(), 10.0, no_util)
        w.tick()
        f = w.tick()
        assert f.live is not None
        ex.update(f)
        got = scrape_exporter(ex.port)
        assert got["inferlab_mbu"][0] == pytest.approx(f.live.mbu.value)
        assert got["inferlab_mbu"][1] == {"model": "smollm2", "hardware": "this machine"}
        assert got["inferlab_mfu"][0] == pytest.approx(f.live.mfu.value)
        assert got["inferlab_floor_step_seconds"][0] == pytest.approx(0.022)
        assert got["inferlab_measured_step_seconds"][0] == pytest.approx(0.05)
        assert got["inferlab_bytes_per_step"][0] == pytest.approx(2.2e9)
        assert got["inferlab_running_batch"][0] == 4.0
        assert got["inferlab_server_up"][0] == 1.0
        # the server goes away: its gauges disappear rather than read 0
        w2 = Watcher(Script([MetricsError("gone")]), physics(), 10.0, no_util)
        ex.update(w2.tick())
        got = scrape_exporter(ex.port)
        assert "inferlab_mbu" not in got and got["inferlab_server_up"][0] == 0.0
    finally:
        ex.close()


def test_exporter_port_in_use_is_one_clear_error() -> None:
    ex = Exporter(0, "m", "h")
    try:
        with pytest.raises(Exception, match=r"--prometheus \d+: cannot listen"):
            Exporter(ex.port, "m", "h")
    finally:
        ex.close()


def test_record_has_a_line_per_interval_and_survives_ctrl_c(tmp_path: Path) -> None:
    snaps: list = [steady(float(t)) for t in range(6)]
    snaps.append(KeyboardInterrupt())
    rec = tmp_path / "watch.jsonl"
    cfg = WatchConfig(url="http://x", interval_s=0.25, window_s=1.0, record=rec, tui=False)
    res = run_watch(cfg, physics(), Script(snaps), no_util, io.StringIO(), FakeClock())
    assert res.interrupted and res.frames == 5
    lines = rec.read_text().splitlines()
    assert len(lines) == 1 + 5  # header + one per interval, all flushed
    for line in lines:
        loads_strict(line)  # strict JSON: no NaN/Infinity
    header, frames = read_record(rec)
    assert header.bandwidth_bytes_per_s == 100e9 and len(frames) == 5
    assert frames[-1].live is not None and frames[-1].live.mbu.value == pytest.approx(0.44)
    assert frames[-1].snapshot is not None and frames[-1].snapshot.steps == 1000 + 5 / 0.05


def test_first_scrape_failing_is_an_error_before_anything_opens(tmp_path: Path) -> None:
    cfg = WatchConfig(url="http://x", record=tmp_path / "r.jsonl", tui=False)
    with pytest.raises(MetricsError, match="refused"):
        run_watch(cfg, physics(), Script([MetricsError("refused")]), no_util)
    assert not (tmp_path / "r.jsonl").exists()


def test_duration_bounds_the_loop(tmp_path: Path) -> None:
    snaps = [steady(float(t)) for t in range(50)]
    cfg = WatchConfig(url="http://x", interval_s=0.25, duration_s=1.0, tui=False)
    clock = FakeClock()
    res = run_watch(cfg, physics(), Script(snaps), no_util, io.StringIO(), clock)
    assert not res.interrupted and res.frames == 4  # 1 s of 0.25 s intervals
    assert clock.sleeps == [0.25] * 4 and clock.t == 101.0


def test_a_slow_scrape_does_not_push_the_schedule_back() -> None:
    clock = FakeClock()
    snaps = [steady(float(t)) for t in range(50)]

    def scrape() -> Snapshot:
        if len(snaps) == 49:  # the first tick's scrape takes 0.6 s (the strict one went before)
            clock.t += 0.6
        return snaps.pop(0)

    cfg = WatchConfig(url="http://x", interval_s=0.25, duration_s=1.0, tui=False)
    res = run_watch(cfg, physics(), scrape, no_util, io.StringIO(), clock)
    # the tick due at 0.25 ends at 0.85; those due at 0.5 and 0.75 are skipped (overdue:
    # no burst of scrapes), and the next runs when it was due, at 1.0: none moved later
    assert res.frames == 2
    assert clock.sleeps == [0.25, pytest.approx(0.15)]
