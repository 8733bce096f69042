"""The model a server names in /v1/models, when it is a readable local file (llama-server)."""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.watch.served import model_names, readable_spec, server_base
from tests.servermetrics.conftest import fixture_text


def test_llama_server_names_its_gguf_path() -> None:
    data = json.loads(fixture_text("llamacpp", "v1-models.json"))  # llama-server b11434's answer
    names = model_names(data)
    assert len(names) == 1 and names[0].endswith(".gguf")


def test_readable_spec_needs_a_local_file(tmp_path: Path) -> None:
    g = tmp_path / "m.gguf"
    assert readable_spec([str(g)]) is None
    g.write_bytes(b"GGUF")
    assert readable_spec(["smollm2", str(g)]) == str(g)
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{}")
    assert readable_spec([str(tmp_path / "hf")]) == str(tmp_path / "hf")


def test_server_base_from_any_form() -> None:
    for u in ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1", "127.0.0.1:8080/metrics"):
        assert server_base(u) == "http://127.0.0.1:8080"
