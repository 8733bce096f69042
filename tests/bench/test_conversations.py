"""Conversations (--turns N --think-time T): each turn sends the whole history, replies as
the server streamed them, T after the last reply ended; a server without a chat template
is one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .chat_server import chat_server

pytestmark = pytest.mark.slow

THINK_S = 0.05


def test_each_turn_carries_the_real_history(run_cli: Any, tmp_path: Path) -> None:
    with chat_server() as (url, seen):
        code, _, err = run_cli(
            "bench",
            "--url",
            url,
            "--concurrency",
            "1",
            "--turns",
            "3",
            "--think-time",
            f"{THINK_S}s",
            "--requests-per-level",
            "3",
            "--warmup",
            "0",
            "--prompt-tokens",
            "6",
            "--output-tokens",
            "2",
            "--out",
            str(tmp_path),
            "--no-plots",
            "--no-scrape",
            "--no-canary",
        )
    assert code == 0, err
    # (the first streamed body is bench's check that the address streams OpenAI's way)
    streamed = [b["messages"] for b in seen.bodies if b.get("stream")]
    assert streamed[0] == [{"role": "user", "content": "hello"}]
    turns = streamed[1:]
    assert [len(m) for m in turns] == [1, 3, 5]
    # Turn 2 repeats turn 1's message and the reply the server streamed for it, word for word.
    assert turns[1][0] == turns[0][0]
    assert turns[1][1] == {"role": "assistant", "content": " r3w0 r3w1"}
    assert turns[2][3] == {"role": "assistant", "content": " r4w0 r4w1"}
    assert all(len(m[-1]["content"].split()) == 6 for m in turns)  # each new message: exact
    rows = [json.loads(x) for x in (tmp_path / "records.jsonl").read_text().splitlines()]
    rows.sort(key=lambda r: r["turn"])
    assert [(r["conversation_id"], r["turn"]) for r in rows] == [(0, 0), (0, 1), (0, 2)]
    for before, after in zip(rows, rows[1:], strict=False):  # sent T after the reply ended
        assert after["scheduled_ns"] - before["end_ns"] >= THINK_S * 1e9
    level = json.loads((tmp_path / "summary.json").read_text())["levels"][0]
    assert [t["turn"] for t in level["per_turn"]] == [0, 1, 2]
    assert all(t["ttft_s"]["n"] == 1 for t in level["per_turn"])


def test_turns_without_a_chat_template_is_one_clear_error(run_cli: Any, tmp_path: Path) -> None:
    with chat_server(chat_status=400) as (url, _):
        code, out, err = run_cli(
            "bench",
            "--url",
            url,
            "--concurrency",
            "1",
            "--turns",
            "2",
            "--out",
            str(tmp_path / "r"),
            "--no-scrape",
            "--json",
        )
    assert code == 2 and out == ""
    assert "--turns needs the chat API with a chat template" in err
    assert err.strip().count("\n") == 0  # one line


def test_requests_longer_than_the_context_are_refused(run_cli: Any, tmp_path: Path) -> None:
    with chat_server(max_model_len=100) as (url, _):
        code, out, err = run_cli(
            "bench",
            "--url",
            url,
            "--concurrency",
            "1",
            "--api",
            "chat",
            "--prompt-tokens",
            "uniform:10:200",
            "--output-tokens",
            "8",
            "--out",
            str(tmp_path / "r"),
            "--json",
        )
    assert code == 2 and out == ""
    assert "beyond the server's max_model_len of 100" in err


def test_a_trace_row_beyond_the_context_is_named(run_cli: Any, tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp_s,prompt_tokens,output_tokens\n0,20,5\n1,300,20\n")
    with chat_server(max_model_len=100) as (url, seen):
        code, out, err = run_cli(
            "bench", "--url", url, "--trace", str(trace), "--out", str(tmp_path / "r"), "--json"
        )
    assert code == 2 and out == "" and not seen.bodies  # refused before any request
    assert f"{trace}:3" in err and "max_model_len of 100" in err and "--length-scale" in err


def test_chat_prompt_lengths_are_checked_after_the_template(run_cli: Any, tmp_path: Path) -> None:
    """The server's template adds 7 tokens to every message: measured once from the first
    request, so no prompt_tokens_off for a run whose messages are exactly the length asked."""
    with chat_server(template_tokens=7) as (url, _):
        code, _, err = run_cli(
            "bench", "--url", url, "--api", "chat", "--concurrency", "1", "--warmup", "0",
            "--requests-per-level", "3", "--prompt-tokens", "6", "--output-tokens", "2",
            "--out", str(tmp_path / "r"), "--no-plots", "--no-scrape", "--no-report",
        )  # fmt: skip
    assert code == 0, err
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["extra"]["prompt_template_tokens"] == 7
    assert s["levels"][0]["prompt_tokens_usage_p50"] == 13
    assert not [w for w in s["warnings"] if w["code"] == "prompt_tokens_off"]
