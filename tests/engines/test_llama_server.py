"""Starting the embedded server: a port in use and a missing model are clear errors."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from inferlab.engines.bundled import llama_server_path, smollm2_gguf_path
from inferlab.engines.llama_server import LlamaServer, ServerOptions
from inferlab.errors import InferlabError


def test_bundled_files_are_found() -> None:
    assert smollm2_gguf_path().stat().st_size > 90e6
    assert llama_server_path().is_file()


@pytest.mark.slow
def test_port_in_use() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(InferlabError, match=f"port {port} .* already in use"):
            LlamaServer(ServerOptions(port=port))


def test_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(InferlabError, match="model file not found"):
        LlamaServer(ServerOptions(gguf=tmp_path / "nope.gguf"))


@pytest.mark.slow
def test_crash_before_ready_shows_the_log(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF not really")
    srv = LlamaServer(ServerOptions(gguf=bad, log_path=tmp_path / "log"))
    with pytest.raises(InferlabError, match="exited with code"):
        srv.start(timeout_s=30)
