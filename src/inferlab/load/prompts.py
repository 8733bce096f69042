"""`bench --prompts FILE`: real text for the prompts, from the user's own JSONL.

Each line is a JSON object with the text under `prompt` or `text` (or a chat's
`messages`, whose `content` strings are joined). The file's words, in order, are the
source each prompt is cut from: a prompt still has exactly its `--prompt-tokens`
(counted by the server's /tokenize) and still opens with words unique to it, so no
request reuses another's prefix cache; only the words are real text instead of a list
of common words. Blank lines are skipped; a line that is not such an object is
refused with its line number.
"""

from __future__ import annotations

import json
from pathlib import Path

from inferlab.errors import ConfigError, InferlabError, literal

MAX_PROMPTS_BYTES = 256 << 20  # a corpus, not a data lake: read whole, refused beyond this
MIN_WORDS = 16  # fewer and every prompt is the same few words again


def _text(obj: object) -> str | None:
    if not isinstance(obj, dict):
        return None
    for key in ("prompt", "text"):
        if isinstance(obj.get(key), str):
            return str(obj[key])
    messages = obj.get("messages")
    if isinstance(messages, list):
        parts = [m.get("content") for m in messages if isinstance(m, dict)]
        texts = [p for p in parts if isinstance(p, str)]
        if texts and len(texts) == len(parts):
            return " ".join(texts)
    return None


def read_prompt_words(path: Path) -> tuple[str, ...]:
    """The words of every prompt in the JSONL file, in order; one clear error otherwise."""
    if not path.is_file():
        raise ConfigError(f"{{prompts}} {literal(str(path))}: no such file")
    if path.stat().st_size > MAX_PROMPTS_BYTES:
        raise ConfigError(
            f"{{prompts}} {literal(str(path))}: larger than {MAX_PROMPTS_BYTES >> 20} MiB"
        )
    words: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                text = _text(json.loads(line))
            except ValueError:
                text = None
            if text is None:
                raise InferlabError(
                    f"{path}:{n}: not a JSON object with a 'prompt' or 'text' string "
                    '(e.g. {"prompt": "Summarise this ..."})'
                )
            words.extend(text.split())
    if len(words) < MIN_WORDS:
        raise ConfigError(
            f"{{prompts}} {literal(str(path))}: {len(words)} words; give at least {MIN_WORDS}"
        )
    return tuple(words)
