"""`inferlab watch` end to end against the fake server's /metrics (a step clock at its TPOT,
the running batch = streams in flight): MBU against the hand computation, the exporter read
by prometheus_client's parser, and the live page in a real headless Chromium."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from inferlab.testing.fake_server import running_fake_server
from inferlab.watch.frame import Frame
from inferlab.watch.record import read_record
from tests.lifecycle.procs import wait_for
from tests.watch.load import steady_load

pytestmark = pytest.mark.slow  # the fake server and watch as real processes


TPOT_S = 0.02  # the fake engine steps every 20 ms while anything is in flight
CLIENTS = 4
WEIGHT_BYTES = 5e8
KV_PER_TOKEN = 2e5
BANDWIDTH = 100e9
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Run:
    record: Path
    web_url: str
    prom_port: int
    exporter_text: str
    doms: list[tuple[str, str]]  # (DOM, chromium's stderr) dumped while watch ran


def _chromium(url: str, budget_ms: int = 2500) -> tuple[str, str]:
    assert CHROMIUM is not None
    p = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return p.stdout, p.stderr


def _wait_line(proc: subprocess.Popen[str], prefix: str, seen: list[str]) -> str:
    assert proc.stderr is not None
    for _ in range(20):
        line = proc.stderr.readline()
        seen.append(line)
        if line.startswith(prefix):
            return line.split(prefix, 1)[1].strip()
    raise AssertionError(f"no {prefix!r} line from watch: {seen}")


INTERVAL_S, WINDOW_S = 0.5, 3.0


def _window_start(frames: list[Frame], f: Frame) -> Frame | None:
    """The recorded frame the window of `f` starts at (None: before the record began)."""
    if f.live is None:
        return None
    return next((a for a in frames if a.t_mono_s == f.t_mono_s - f.live.window_s), None)


def _full_windows(rec: Path) -> list[tuple[Frame, Frame]]:
    """(window start, frame) for every frame whose window is full and starts in the record."""
    if not rec.exists():
        return []
    _, frames = read_record(rec)
    pairs = [(_window_start(frames, f), f) for f in frames]
    return [(a, f) for a, f in pairs if a is not None and a.snapshot is not None]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    out = tmp_path_factory.mktemp("watch")
    rec = out / "watch.jsonl"
    with running_fake_server(ttft=0.02, tpot=TPOT_S, slow_every=0, metrics="vllm") as v1:  # noqa: SIM117
        with steady_load(v1, CLIENTS):
            cmd = [sys.executable, "-m", "inferlab.cli", "watch", "--url", v1,
                   "--weight-bytes", f"{WEIGHT_BYTES}B", "--kv-bytes-per-token", f"{KV_PER_TOKEN}B",
                   "--bandwidth", f"{BANDWIDTH / 1e9:g}GB/s", "--flops", "10TFLOPS",
                   "--interval", f"{INTERVAL_S}s", "--window", f"{WINDOW_S}s",
                   "--duration", "300s", "--record", str(rec), "--web", "0", "--prometheus", "0",
                   "--no-tui"]  # fmt: skip
            proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
            seen: list[str] = []
            try:
                prom = _wait_line(proc, "prometheus: ", seen)
                web = _wait_line(proc, "web page: ", seen)
                m = re.search(r":(\d+)/metrics", prom)
                assert m is not None, prom
                # A full window is a count of intervals, not a time slept: wait (bounded) for
                # two frames whose window spans WINDOW_S from a frame in the record.
                wait_for(lambda: len(_full_windows(rec)) >= 2, 120, "two full windows")
                with urllib.request.urlopen(prom, timeout=5) as r:
                    exporter_text = r.read().decode()
                doms = []
                if CHROMIUM:
                    doms.append(_chromium(web))
                    n_frames = len(read_record(rec)[1])
                    wait_for(lambda: len(read_record(rec)[1]) > n_frames, 60, "a newer frame")
                    doms.append(_chromium(web))
                proc.send_signal(signal.SIGINT)  # Ctrl-C: exits 0 with the record flushed
                _, err = proc.communicate(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
            assert proc.returncode == 0, "".join(seen) + err
    yield Run(rec, web, int(m.group(1)), exporter_text, doms)


def test_one_record_line_per_frame_in_order(run: Run) -> None:
    header, frames = read_record(run.record)
    assert header.interval_s == INTERVAL_S and header.window_s == WINDOW_S
    t = [f.t_mono_s for f in frames]
    assert len(frames) >= 2 and t == sorted(t) and len(set(t)) == len(t)


def test_the_window_spans_its_length_from_the_newest_scrape_before_it(run: Run) -> None:
    _, frames = read_record(run.record)
    times = [f.t_mono_s for f in frames if f.snapshot is not None]
    for a, f in _full_windows(run.record):
        assert f.live is not None and f.live.window_s >= WINDOW_S
        # a is the newest scrape at or before the window's start: none between them
        assert not [x for x in times if a.t_mono_s < x <= f.t_mono_s - WINDOW_S]


def test_mbu_matches_the_hand_computation_within_1_percent(run: Run) -> None:
    full = _full_windows(run.record)
    assert full, "no frame with a full window"
    for a_frame, f in full[-4:]:
        lv, a, b = f.live, a_frame.snapshot, f.snapshot
        assert lv is not None and a is not None and b is not None
        assert a.steps is not None and b.steps is not None
        # by hand, from the raw counters: steps over the window; the streams' KV tokens
        steps_per_s = (b.steps - a.steps) / (b.t_mono_s - a.t_mono_s)
        assert lv.steps_per_s.value == pytest.approx(steps_per_s, rel=1e-9)
        # the mean running batch can never exceed the clients that load the server
        assert lv.running.value is not None and 0 <= lv.running.value <= CLIENTS
        kv_tokens = (lv.kv_cache_usage.value or 0) * (b.kv_capacity_tokens or 0)
        bytes_step = WEIGHT_BYTES + kv_tokens * KV_PER_TOKEN
        assert lv.mbu.value == pytest.approx(bytes_step * steps_per_s / BANDWIDTH, rel=0.01)
        # vLLM's own estimate is the fake engine's 285 MB per step, shown beside ours
        assert lv.engine_bytes_per_step.value == pytest.approx(285e6, rel=1e-9)


def test_exporter_read_by_prometheus_client(run: Run) -> None:
    got = {
        s.name: s for fam in text_string_to_metric_families(run.exporter_text) for s in fam.samples
    }
    for name in ("inferlab_mbu", "inferlab_mfu", "inferlab_floor_step_seconds",
                 "inferlab_measured_step_seconds", "inferlab_bytes_per_step",
                 "inferlab_running_batch"):  # fmt: skip
        assert name in got, name
        assert got[name].labels == {"model": "stated", "hardware": "stated hardware"}
    # what it serves is one frame of the record, as the watch derived it
    _, frames = read_record(run.record)
    shown = [f.live for f in frames if f.live is not None and f.live.mbu.value is not None]
    match = [lv for lv in shown if lv.mbu.value == got["inferlab_mbu"].value]
    assert match, (got["inferlab_mbu"].value, [lv.mbu.value for lv in shown])
    assert got["inferlab_measured_step_seconds"].value == match[-1].measured_step_s.value


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install -y chromium)")
def test_page_in_chromium_matches_the_record_and_updates(run: Run) -> None:
    _, frames = read_record(run.record)
    by_t = {repr(f.t_unix_s): f for f in frames}
    shown = []
    for dom, err in run.doms:
        console = [ln for ln in err.splitlines() if ":CONSOLE" in ln]
        assert not console, console  # no console errors (nor any console output)
        assert re.search(r'<p id="errors"></p>', dom), "the page caught a script error"
        m = re.search(r'id="mbu" data-value="([^"]+)" data-t="([^"]+)"[^>]*>([^<]+)<', dom)
        assert m, dom[:2000]
        value, t, text = float(m.group(1)), m.group(2), m.group(3)
        rec = by_t[repr(float(t))]  # the record's line for the same instant
        assert rec.live is not None and rec.live.mbu.value is not None
        assert text == f"{rec.live.mbu.value * 100:.1f} %"
        assert value == pytest.approx(rec.live.mbu.value, rel=1e-12)
        assert "memory-bound" in dom
        shown.append(float(t))
    assert shown[1] > shown[0]  # it updates


def test_page_has_no_external_resources() -> None:
    from inferlab.watch.web import page_html

    html = page_html()
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # no CDN, nothing fetched from afar
