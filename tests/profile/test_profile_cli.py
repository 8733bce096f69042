"""`inferlab profile` refuses bad input in one line, exit 2, writing nothing."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.clirun import RunCli


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _one_error_line(err: str) -> str:
    lines = [s for s in err.splitlines() if s.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_no_server_at_the_url_is_one_line_and_no_file(tmp_path: Path, run_cli: RunCli) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    code, out, err = run_cli("profile", "--url", url, "--out", str(tmp_path / "p"), "--json")
    assert code == 2 and out == ""
    assert "cannot reach" in _one_error_line(err)
    assert not (tmp_path / "p").exists()


def test_an_existing_profile_is_kept_unless_overwrite(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "profile.json").write_text("{}")
    code, _, err = run_cli("profile", "--url", "http://127.0.0.1:1/v1", "--out", str(tmp_path))
    assert code == 2
    assert "already holds profile.json; add --overwrite" in _one_error_line(err)
    assert (tmp_path / "profile.json").read_text() == "{}"


def test_a_url_that_is_not_one_and_a_budget_out_of_range(tmp_path: Path, run_cli: RunCli) -> None:
    code, _, err = run_cli("profile", "--url", "ftp://x", "--out", str(tmp_path / "p"))
    assert code == 2 and "--url" in _one_error_line(err)
    code, _, err = run_cli("profile", "--url", "http://127.0.0.1:1/v1", "--budget", "9")
    assert code == 2 and "--budget" in _one_error_line(err)
    assert not (tmp_path / "p").exists()
