"""One real llama.cpp server (bundled SmolLM2 GGUF) for the whole integration session:
four slots of 256 tokens, so a c=4 level runs as one batch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from inferlab.engines.llama_server import LlamaServer, ServerOptions

SLOTS = 4


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    log = Path(tmp_path_factory.mktemp("llama")) / "llama-server.log"
    with LlamaServer(ServerOptions(parallel=SLOTS, ctx_per_slot=256, log_path=log)) as srv:
        assert "--metrics" in srv.command()
        yield srv
