"""One real llama.cpp server (bundled SmolLM2 GGUF) for the whole integration session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.engines.llama_server import LlamaServer, ServerOptions


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    log = Path(tmp_path_factory.mktemp("llama")) / "llama-server.log"
    with LlamaServer(ServerOptions(parallel=2, ctx_per_slot=512, log_path=log)) as srv:
        yield srv
