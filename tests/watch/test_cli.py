"""`inferlab watch` and `inferlab report` at the command line: bad input is one line and exit 2."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import pytest

from inferlab.cli import main
from inferlab.testing.fake_server import running_fake_server
from inferlab.watch.loop import WatchConfig, run_watch
from tests.watch.helpers import FakeClock, physics, steady
from tests.watch.test_frame import Script, no_util

STATED = ["--weight-bytes", "1GB", "--bandwidth", "10GB/s"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("inferlab watch: error: "), err
    assert needle in err[0]


def test_unreachable_url(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    rec = tmp_path / "r.jsonl"
    # --start-timeout 0: no wait for a server that is not up (test_waiting.py has the wait)
    _one_line_exit_2(capsys, ["watch", "--url", url, *STATED, "--record", str(rec),
                              "--start-timeout", "0"], "cannot reach")  # fmt: skip
    assert not rec.exists()  # nothing opened before the first scrape answered


@pytest.mark.slow
def test_no_metrics_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    with running_fake_server(metrics="none") as v1:
        _one_line_exit_2(capsys, ["watch", "--url", v1, *STATED], "404")


def test_unknown_model_and_missing_hardware(capsys: pytest.CaptureFixture[str]) -> None:
    url = "http://127.0.0.1:9"
    _one_line_exit_2(capsys, ["watch", "--url", url, "--model", "no-such-model-xyz",
                              "--bandwidth", "1GB/s"], "no-such-model-xyz")  # fmt: skip
    _one_line_exit_2(capsys, ["watch", "--url", url, "--weight-bytes", "1GB"], "--hardware")
    _one_line_exit_2(capsys, ["watch", "--url", url, "--gguf", "/nope.gguf", "--bandwidth",
                              "1GB/s"], "/nope.gguf")  # fmt: skip


@pytest.mark.slow
def test_no_model_and_a_server_that_names_none(capsys: pytest.CaptureFixture[str]) -> None:
    with running_fake_server(metrics="vllm") as v1:
        _one_line_exit_2(capsys, ["watch", "--url", v1, "--bandwidth", "1GB/s"], "--model")


@pytest.mark.slow
def test_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy, running_fake_server(metrics="llamacpp") as v1:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        for flag in ("--web", "--prometheus"):
            _one_line_exit_2(
                capsys, ["watch", "--url", v1, *STATED, flag, str(port), "--duration", "1s"],
                f"{flag} {port}: cannot listen",
            )  # fmt: skip


def test_bad_flags(capsys: pytest.CaptureFixture[str]) -> None:
    url = "http://127.0.0.1:9"
    _one_line_exit_2(capsys, ["watch", "--url", url, *STATED, "--interval", "10ms"], "--interval")
    _one_line_exit_2(capsys, ["watch", "--url", url, *STATED, "--window", "1s",
                              "--interval", "2s"], "--window")  # fmt: skip


def test_report_renders_a_recorded_watch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cfg = WatchConfig(url="http://x", interval_s=0.25, window_s=1.0, duration_s=1.5,
                      record=tmp_path / "watch.jsonl", tui=False)  # fmt: skip
    snaps = [steady(float(t)) for t in range(20)]
    run_watch(cfg, physics(), Script(snaps), no_util, io.StringIO(), FakeClock())
    assert main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "median MBU: 44%" in out
    assert (tmp_path / "watch.png").stat().st_size > 10_000
    page = (tmp_path / "watch.html").read_text()
    assert "data:image/png;base64," in page and "median MBU: 44%" in page


def test_report_on_a_folder_with_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    assert main(["report", str(tmp_path)]) == 2


def test_unknown_dialect(capsys: pytest.CaptureFixture[str]) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Plain(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = b"# TYPE some_other_thing_total counter\nsome_other_thing_total 1\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    srv = HTTPServer(("127.0.0.1", 0), Plain)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        _one_line_exit_2(capsys, ["watch", "--url", url, *STATED], "no known engine")
    finally:
        srv.shutdown()
        srv.server_close()
