"""Traces: the bundled files read to their known numbers, every layout is detected, the window,
speed and scale arithmetic, shared Mooncake blocks, and bad input named by file:row:column."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inferlab.commands.flags.names import said
from inferlab.errors import InferlabError
from inferlab.load.traces import (
    BUNDLED,
    Trace,
    check_context,
    parse_window,
    read_trace,
    scale_lengths,
    shape_trace,
)

# --- the bundled traces ------------------------------------------------------


def test_bundled_files_and_their_licences_are_package_data() -> None:
    data = resources.files("inferlab.load") / "data"
    names = [*BUNDLED.values(), "LICENSE-CC-BY-4.0-azure.txt", "LICENSE-APACHE-2.0-mooncake.txt"]
    assert all((data / name).is_file() for name in [*names, "README.md"])
    assert "Splitwise" in (data / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "fmt", "rows", "span_s"),
    [
        ("azure-conv", "azure", 19_366, 3501.7),
        ("azure-code", "azure", 8_819, 3435.9),
        ("mooncake-conv", "mooncake", 12_031, 3537.0),
    ],
)
def test_bundled_rows_and_span(name: str, fmt: str, rows: int, span_s: float) -> None:
    t = read_trace(name)
    assert (t.source, t.format, t.rows) == (name, fmt, rows)
    assert t.span_s == pytest.approx(span_s, abs=0.05)
    assert t.arrival_s[0] == 0 and bool(np.all(np.diff(t.arrival_s) >= 0))
    assert t.prompt_tokens.min() >= 1 and t.output_tokens.min() >= 1
    assert int(t.file_lines[0]) == (2 if fmt == "azure" else 1)  # the CSV header is line 1


def test_azure_conv_first_20_seconds() -> None:
    t = read_trace("azure-conv")
    s = shape_trace(t, (0, 20))
    assert s.rows == 31
    assert int(s.prompt_tokens.max()) == 4085 and int(s.output_tokens.max()) == 194
    assert round(float(s.output_tokens.mean())) == 94
    assert s.describe() == "azure-conv window 0:20 s: 31 requests over 19.9 s"
    fast = shape_trace(t, (10, 20), speed=2, length_scale=0.1)
    assert (
        fast.describe()
        == "azure-conv window 10:20 s: 18 requests over 5.0 s, 2x faster, lengths x0.1"
    )
    assert shape_trace(t, (3000, math.inf)).describe() == (
        "azure-conv window 3000 s to the end: 2,065 requests over 501.7 s"
    )
    # Row 1 is 2023-11-16 18:15:46.6805900 (UTC assumed), row 2 4.314579 s later.
    assert t.start_s == datetime(2023, 11, 16, 18, 15, 46, 680590, tzinfo=UTC).timestamp()
    assert t.arrival_s[1] == pytest.approx(4.314579, abs=1e-6)
    assert (int(t.prompt_tokens[0]), int(t.output_tokens[0])) == (374, 44)


def test_mooncake_blocks_and_windows() -> None:
    t = read_trace("mooncake-conv")
    assert t.hash_ids is not None and len(t.hash_ids) == t.rows
    assert all(ids[0] == 0 for ids in t.hash_ids)  # one system prompt every request shares
    # Each id stands for 512 tokens: a prompt has ceil(input / 512) blocks.
    assert all(
        len(ids) == -(-int(p) // 512) for ids, p in zip(t.hash_ids, t.prompt_tokens, strict=True)
    )
    assert shape_trace(t, (0, 5)).rows == 26
    first_minute = shape_trace(t, (0, 60))
    assert first_minute.rows == 162 and int(first_minute.prompt_tokens.max()) == 120_633
    assert first_minute.prompt_blocks(0)[:2] == ((0, 512), (1, 512))
    assert t.hash_ids[0] == tuple(range(14)) and int(t.prompt_tokens[0]) == 6758


def test_mooncake_implied_prefix_reuse() -> None:
    s = shape_trace(read_trace("mooncake-conv"))
    assert int(s.prompt_tokens.sum()) == 144_793_823
    assert s.hash_ids is not None
    users: dict[int, int] = {}
    for ids in s.hash_ids:
        for h in set(ids):
            users[h] = users.get(h, 0) + 1
    assert sum(n > 1 for n in users.values()) == 44_144  # block ids sent by 2 requests or more


def test_traces_are_read_only() -> None:
    t = read_trace("azure-code")
    with pytest.raises(ValueError):
        t.arrival_s[0] = 5.0
    with pytest.raises(ValueError):
        shape_trace(t, (0, 10)).prompt_tokens[0] = 1


# --- layouts -----------------------------------------------------------------


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_generic_csv_and_jsonl(tmp_path: Path) -> None:
    csv_path = _write(
        tmp_path, "g.csv", "timestamp_s,prompt_tokens,output_tokens,x\n5,10,2,a\n7.5,20,3,b\n"
    )
    t = read_trace(csv_path)
    assert t.format == "generic" and t.start_s == 5 and t.arrival_s.tolist() == [0, 2.5]
    assert t.prompt_tokens.tolist() == [10, 20] and t.output_tokens.tolist() == [2, 3]
    assert t.hash_ids is None and t.file_lines.tolist() == [2, 3]
    jsonl = _write(
        tmp_path,
        "g.jsonl",
        '{"timestamp_s": 1, "prompt_tokens": 4, "output_tokens": 1}\n\n'
        '{"timestamp_s": 2, "prompt_tokens": 5, "output_tokens": 6}\n',
    )
    j = read_trace(jsonl)
    assert j.format == "generic" and j.arrival_s.tolist() == [0, 1]
    assert j.file_lines.tolist() == [1, 3]  # the blank line still counts


def test_legacy_simulate_jsonl_is_sorted_as_before(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "old.jsonl",
        '{"arrival_s": 0.5, "prompt_tokens": 100, "output_tokens": 20}\n'
        '{"arrival_s": 0.1, "prompt_tokens": 50, "output_tokens": 10}\n',
    )
    t = read_trace(path)
    assert t.format == "simulate" and t.start_s == 0.1
    assert t.arrival_s.tolist() == pytest.approx([0, 0.4])
    assert t.prompt_tokens.tolist() == [50, 100] and t.file_lines.tolist() == [2, 1]


def test_mooncake_file_in_ms(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "m.jsonl",
        '{"timestamp": 1000, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n'
        '{"timestamp": 3500, "input_length": 100, "output_length": 7, "hash_ids": [0]}\n',
    )
    t = read_trace(path)
    assert t.format == "mooncake" and t.start_s == 1.0 and t.arrival_s.tolist() == [0, 2.5]
    assert t.hash_ids == ((0, 1), (0,))


# --- window, speed, scale ------------------------------------------------------


def _synthetic(times: list[float], prompts: list[int] | None = None) -> Trace:
    n = len(times)
    lengths = np.array(prompts or [10] * n, dtype=np.int64)
    return Trace(
        "synthetic",
        "generic",
        np.array(times),
        lengths,
        np.full(n, 3, dtype=np.int64),
        None,
        np.arange(2, n + 2, dtype=np.int64),
        0.0,
    )


def test_window_includes_start_excludes_end_and_starts_the_replay_at_zero() -> None:
    t = _synthetic([0, 1, 2, 3, 4, 5])
    s = shape_trace(t, (1, 3))
    assert s.arrival_s.tolist() == [0, 1] and s.file_lines.tolist() == [3, 4]
    late = shape_trace(t, (1.5, 3), speed=2)  # the window's start, not its first row, is 0
    assert late.arrival_s.tolist() == [0.25]
    assert shape_trace(t, None, speed=4).arrival_s.tolist() == [0, 0.25, 0.5, 0.75, 1, 1.25]
    assert shape_trace(t, (4, math.inf)).rows == 2


def test_length_scale_rounds_halves_up_and_never_gives_zero() -> None:
    assert scale_lengths(np.array([1, 3, 10, 15, 5]), 0.1).tolist() == [1, 1, 1, 2, 1]
    assert scale_lengths(np.array([5, 7]), 0.5).tolist() == [3, 4]
    s = shape_trace(_synthetic([0, 1], [100, 250]), length_scale=0.02)
    assert s.prompt_tokens.tolist() == [2, 5] and s.output_tokens.tolist() == [1, 1]


def test_outputs_scale_apart_from_prompts_when_asked() -> None:
    t = _synthetic([0, 1], [100, 250])  # outputs of 3 tokens each
    s = shape_trace(t, length_scale=0.02, output_scale=2)
    assert s.prompt_tokens.tolist() == [2, 5] and s.output_tokens.tolist() == [6, 6]
    assert s.describe().endswith("prompts x0.02, outputs x2")
    assert shape_trace(t, length_scale=0.5).describe().endswith("lengths x0.5")
    with pytest.raises(InferlabError) as e:
        check_context(s, 8, "the server's n_ctx")
    assert "after --length-scale 0.02 and --output-scale 2 exceeds" in said(e.value)
    with pytest.raises(InferlabError, match="output_scale must be a positive number"):
        shape_trace(t, output_scale=0.0)


def test_scaled_blocks_keep_the_sharing(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "m.jsonl",
        '{"timestamp": 0, "input_length": 1500, "output_length": 5, "hash_ids": [0, 1, 2]}\n'
        '{"timestamp": 10, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 3]}\n'
        '{"timestamp": 20, "input_length": 300, "output_length": 5, "hash_ids": [5]}\n',
    )
    s = shape_trace(read_trace(path))
    assert s.block_tokens == 512
    assert s.prompt_blocks(0) == ((0, 512), (1, 512), (2, 476))
    assert s.prompt_blocks(1) == ((0, 512), (1, 512), (3, 76))
    small = shape_trace(read_trace(path), length_scale=0.01)  # blocks of 5, prompts 15, 11, 3
    assert small.block_tokens == 5 and small.prompt_tokens.tolist() == [15, 11, 3]
    assert small.prompt_blocks(1) == ((0, 5), (1, 5), (3, 1))


def test_check_context_names_the_first_row_too_long() -> None:
    s = shape_trace(_synthetic([0, 1, 2], [100, 4000, 9000]))
    check_context(s, 9003, "the server's n_ctx")  # 9000 + 3 fits exactly
    with pytest.raises(InferlabError) as e:
        check_context(s, 4000, "the server's n_ctx")
    assert said(e.value) == (
        "synthetic:3: prompt 4,000 + output 3 tokens exceeds the server's n_ctx of 4,000 "
        "(2 of 3 requests do); use --length-scale 0.44 or a --trace-window without them"
    )
    scaled = shape_trace(_synthetic([0], [9000]), length_scale=0.5)
    with pytest.raises(InferlabError) as e:
        check_context(scaled, 1000, "max_model_len")
    assert "tokens after --length-scale 0.5 exceeds" in said(e.value)


# --- bad input ------------------------------------------------------------------

AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
ROW = "2023-11-16 18:15:46.6805900,374,44\n"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("a.csv", "TIMESTAMP,ContextTokens\n" + ROW, ":1: missing column GeneratedTokens"),
        ("a.csv", AZURE_HEADER + ROW + "yesterday,3,4\n", ":3: column TIMESTAMP: 'yesterday'"),
        (
            "a.csv",
            AZURE_HEADER + ROW + "2023-11-16 18:15:50,3,4\n2023-11-16 18:15:49,3,4\n",
            ":4: column TIMESTAMP: 2023-11-16 18:15:49 is earlier than the row before (line 3)",
        ),
        (
            "a.csv",
            AZURE_HEADER + "\n" + ROW.replace("374", "abc"),
            ":3: column ContextTokens: 'abc'",
        ),
        (
            "a.csv",
            AZURE_HEADER + ROW.replace(",44", ",0"),
            ":2: column GeneratedTokens: '0' tokens; a length is 1 to 1,000,000,000",
        ),
        ("a.csv", AZURE_HEADER + ROW.replace("374", "-7"), ":2: column ContextTokens: '-7' tokens"),
        (
            "a.csv",
            AZURE_HEADER + ROW + "2023-11-16 18:15:47,5\n",
            ":3: column GeneratedTokens: missing",
        ),
        (
            "g.csv",
            "timestamp_s,prompt_tokens,output_tokens\n-1,3,4\n",
            ":2: column timestamp_s: '-1' is negative",
        ),
        (
            "g.csv",
            "timestamp_s,prompt_tokens,output_tokens\n1,3.5,4\n",
            ":2: column prompt_tokens: '3.5'",
        ),
        ("g.csv", "time,tokens\n1,2\n", ":1: no trace columns (found time, tokens)"),
        ("g.csv", "prompt_tokens,output_tokens\n1,2\n", ":1: missing column timestamp_s"),
        (
            "m.jsonl",
            '{"timestamp": 0, "input_length": 9, "output_length": 1, "hash_ids": [0]}\n'
            '{"timestamp": 1, "input_length": 9, "hash_ids": [0]}\n',
            ":2: missing column output_length",
        ),
        (
            "m.jsonl",
            '{"timestamp": 0, "input_length": 9, "output_length": 1, "hash_ids": ["a"]}\n',
            ":1: column hash_ids: not a list of block ids",
        ),
        (
            "m.jsonl",
            '{"timestamp": 5, "input_length": 9, "output_length": 1, "hash_ids": [0]}\n'
            '{"timestamp": 4, "input_length": 9, "output_length": 1, "hash_ids": [0]}\n',
            ":2: column timestamp: 4 is earlier than the row before (line 1)",
        ),
        (
            "m.jsonl",
            '{"timestamp": 0, "input_length": 9, "output_length": 1}\n',
            ":1: missing column hash_ids",
        ),
        (
            "g.jsonl",
            '{"timestamp_s": 0, "prompt_tokens": 1, "output_tokens": 1}\n{oops\n',
            ":2: not a JSON object",
        ),
        (
            "g.jsonl",
            '{"timestamp_s": "x", "prompt_tokens": 1, "output_tokens": 1}\n',
            ":1: column timestamp_s: 'x'",
        ),
        (
            "g.jsonl",
            '{"timestamp_s": 0, "prompt_tokens": true, "output_tokens": 1}\n',
            ":1: column prompt_tokens: True",
        ),
        (
            "g.jsonl",
            '{"timestamp_s": 0, "prompt_tokens": 1, "output_tokens": 2.5}\n',
            ":1: column output_tokens: 2.5",
        ),
        ("e.csv", "\n  \n", ": the trace file is empty"),
        (
            "g.jsonl",
            '{"timestamp_s": 0, "prompt_tokens": 1e30, "output_tokens": 1}\r\n',
            ":1: column prompt_tokens: 1e+30 tokens; a length is 1 to 1,000,000,000",
        ),
        ("h.csv", AZURE_HEADER, ": the trace has no rows"),
    ],
)
def test_bad_trace_names_file_row_and_column(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = _write(tmp_path, name, text)
    with pytest.raises(InferlabError) as e:
        read_trace(path)
    msg = str(e.value)
    assert msg.startswith(path + message), msg
    assert "\n" not in msg


def test_unknown_trace_lists_the_bundled_names(tmp_path: Path) -> None:
    with pytest.raises(
        InferlabError,
        match="no such file, nor a bundled trace .azure-conv, azure-code, mooncake-conv",
    ):
        read_trace(str(tmp_path / "missing.csv"))


def test_empty_window_says_rows_and_span() -> None:
    with pytest.raises(InferlabError) as e:
        shape_trace(read_trace("azure-conv"), (4000, 5000))
    assert said(e.value) == (
        "azure-conv: --trace-window 4000:5000 holds no request; "
        "the trace has 19,366 rows over 3,501.7 s (from 0 to 3501.7 s)"
    )


def test_bad_shaping_numbers() -> None:
    t = _synthetic([0, 1])
    with pytest.raises(InferlabError, match="trace_speed must be a positive number"):
        shape_trace(t, speed=0.0)
    with pytest.raises(InferlabError, match="length_scale must be a positive number"):
        shape_trace(t, length_scale=-1.0)
    with pytest.raises(InferlabError) as e:
        shape_trace(t, block_tokens=0)
    assert said(e.value).startswith("--trace-block-tokens must be at least 1")


# --- the window flag ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("0:20", (0, 20)),
        ("10min:20min", (600, 1200)),
        ("300:", (300, math.inf)),
        (":60", (0, 60)),
        ("1.5:2.5s", (1.5, 2.5)),
        (":", (0, math.inf)),
    ],
)
def test_parse_window(text: str, window: tuple[float, float]) -> None:
    assert parse_window(text) == window


@pytest.mark.parametrize("text", ["5", "a:b", "20:10", "5:5", "-1:5", "1:2:3", ""])
def test_parse_window_rejects(text: str) -> None:
    with pytest.raises(InferlabError) as e:
        parse_window(text)
    assert said(e.value).startswith(f"--trace-window {text!r}: ")
    assert "START:END" in str(e.value)


# --- properties -------------------------------------------------------------------

TIMES = st.lists(st.floats(0, 1000, allow_nan=False), min_size=1, max_size=60).map(sorted)


@settings(max_examples=80, deadline=None)
@given(
    times=TIMES,
    start=st.floats(0, 1000),
    width=st.floats(0.001, 1000),
    speed=st.floats(0.01, 100),
)
def test_window_keeps_exactly_the_rows_inside_it(
    times: list[float], start: float, width: float, speed: float
) -> None:
    t = _synthetic([x - times[0] for x in times])
    end = start + width
    inside = [x for x in t.arrival_s.tolist() if start <= x < end]
    if not inside:
        with pytest.raises(InferlabError, match="holds no request"):
            shape_trace(t, (start, end), speed=speed)
        return
    s = shape_trace(t, (start, end), speed=speed)
    assert s.rows == len(inside)
    assert s.arrival_s.tolist() == pytest.approx([(x - start) / speed for x in inside])
    assert float(s.arrival_s.min()) >= 0


@settings(max_examples=80, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 10**6), min_size=1, max_size=50),
    factor=st.floats(1e-6, 100),
)
def test_scaling_never_gives_zero_and_stays_near(lengths: list[int], factor: float) -> None:
    out = scale_lengths(np.array(lengths, dtype=np.int64), factor)
    assert out.min() >= 1
    assert all(
        abs(o - max(x * factor, 1)) <= 0.5 + 1e-9
        for o, x in zip(out.tolist(), lengths, strict=True)
    )


def test_zoned_azure_times_match_naive_ones_read_as_utc(tmp_path: Path) -> None:
    naive = AZURE_HEADER + ROW + "2023-11-16 18:15:50.9951690,396,109\n"
    zoned = (
        AZURE_HEADER
        + ROW.replace(",374", "+00:00,374")
        + "2023-11-16 19:15:50.995169+01:00,396,109\n"
    )
    a, b = (
        read_trace(_write(tmp_path, "n.csv", naive)),
        read_trace(_write(tmp_path, "z.csv", zoned)),
    )
    assert a.start_s == b.start_s
    assert a.arrival_s.tolist() == pytest.approx([0, 4.314579], abs=1e-6)
    assert b.arrival_s.tolist() == pytest.approx([0, 4.314579], abs=1e-6)


def test_integral_float_lengths_are_whole_numbers(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "g.jsonl", '{"timestamp_s": 0.5, "prompt_tokens": 12.0, "output_tokens": 3}\n'
    )
    t = read_trace(path)
    assert t.prompt_tokens.tolist() == [12] and t.start_s == 0.5
