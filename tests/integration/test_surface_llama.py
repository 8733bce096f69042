"""The daily user's surface against a real llama-server: its root is not the OpenAI API, its
chat template adds tokens, its GGUF's vocabulary counts what its /tokenize counts."""

from __future__ import annotations

import json
import random
import urllib.request
from pathlib import Path

import pytest

from inferlab.engines.llama_server import LlamaServer
from inferlab.specs.vocab_bpe import load_counter
from tests.clirun import RunCli

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SMALL = [
    "--concurrency", "1", "--requests-per-level", "2", "--warmup", "0",
    "--prompt-tokens", "16", "--output-tokens", "4", "--no-plots", "--no-report",
]  # fmt: skip


def _tokenize(root: str, text: str) -> int:
    body = json.dumps({"content": text}).encode()
    req = urllib.request.Request(f"{root}/tokenize", data=body, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return len(json.load(r)["tokens"])


def test_the_root_url_is_refused_with_v1_suggested(
    llama: LlamaServer, run_cli: RunCli, tmp_path: Path
) -> None:
    """llama-server answers /models and /completions at its root too: the latter in its own
    stream format, which would fail every request of the run."""
    root = llama.base_url.removesuffix("/v1")
    code, _, err = run_cli("bench", "--url", root, *SMALL, "--out", str(tmp_path / "r"))
    assert code == 2 and "not an OpenAI stream" in err and f"{root}/v1" in err
    assert not (tmp_path / "r").exists()


def test_chat_prompts_are_checked_after_the_template(
    llama: LlamaServer, run_cli: RunCli, tmp_path: Path
) -> None:
    out = tmp_path / "chat"
    code, _, err = run_cli(
        "bench", "--url", llama.base_url, "--api", "chat", *SMALL, "--out", str(out)
    )
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text())
    template = s["extra"]["prompt_template_tokens"]
    assert template > 0
    assert s["levels"][0]["prompt_tokens_usage_p50"] == 16 + template
    assert "prompt_tokens_off" not in {w["code"] for w in s["warnings"]}


def test_the_gguf_vocabulary_counts_as_the_server_does(llama: LlamaServer) -> None:
    root = llama.base_url.removesuffix("/v1")
    counter = load_counter(llama.gguf)
    rng = random.Random(7)
    words = "time year people way day man thing woman life child world school".split()  # noqa: SIM905
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(40)]
    texts += ["The quick brown fox, it's 2024! 12345 #@$ (ok).", "naïve café", "a\n\nb  c"]
    assert [counter.count(t) for t in texts] == [_tokenize(root, t) for t in texts]
