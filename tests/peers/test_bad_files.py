"""Foreign, truncated, newer-schema and damaged result files: `inferlab report FILE` refuses
each with exit 2 and one line naming the file and what is wrong, writes nothing, and never
shows a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.clirun import RunCli

FIXTURES = Path(__file__).parents[1] / "engines" / "fixtures"
PEERS = Path(__file__).parents[1] / "fixtures" / "peers"


def _real(rel: str, **changes: object) -> str:
    """A real peer file with some top-level keys changed (or nested: 'a.b')."""
    doc = json.loads((PEERS / rel).read_text(encoding="utf-8"))
    for key, value in changes.items():
        *path, last = key.split("__")
        target = doc
        for k in path:
            target = target[k]
        target[last] = value
    return json.dumps(doc)


VLLM = {
    "backend": "openai",
    "completed": 2,
    "failed": 0,
    "duration": 1.0,
    "max_concurrency": 2,
    "request_rate": "inf",
    "median_ttft_ms": 10.0,
}
DETAILED = {
    **VLLM,
    "ttfts": [0.01, 0.01],
    "itls": [[0.02], [0.02]],
    "start_times": [0.0, 0.1],
    "input_lens": [32, 32],
    "output_lens": [2, 2],
    "errors": ["", ""],
}
AIPERF_LINE = {
    "metadata": {"benchmark_phase": "profiling", "request_start_ns": 1_000_000_000},
    "metrics": {"time_to_first_token": {"value": 5.0, "unit": "ms"}},
    "error": None,
}
GUIDELLM = {
    "metadata": {"version": 2},
    "benchmarks": [{"config": {"strategy": {"type_": "concurrent", "streams": 2}}, "metrics": {}}],
}


def _json(obj: object) -> str:
    return json.dumps(obj)


def _with(base: dict[str, object], **changes: object) -> str:
    return _json({**base, **changes})


def _without(base: dict[str, object], key: str) -> str:
    return _json({k: v for k, v in base.items() if k != key})


def _half(path: Path) -> bytes:
    data = path.read_bytes()
    return data[: len(data) // 2 + 7]


# name -> (file name, bytes, a word the one line must hold)
BAD: dict[str, tuple[str, Callable[[], bytes | str], str]] = {
    "empty": ("r.json", lambda: "", "empty"),
    "blank lines": ("r.json", lambda: "\n \n", "empty"),
    "binary": ("r.json", lambda: b"\x00\xff\xfe\x01" * 8, "UTF-8"),
    "latin-1 text": ("r.csv", lambda: "Metric,caf\xe9\n".encode("latin-1"), "UTF-8"),
    "truncated object": ("r.json", lambda: _json(VLLM)[:40], "not valid JSON"),
    "truncated array": ("r.json", lambda: "[1, 2", "not valid JSON"),
    "array of numbers": ("r.json", lambda: "[1, 2, 3]", "list"),
    "a JSON string": ("r.json", lambda: '"hello"', "YAML"),
    "foreign object": ("r.json", lambda: '{"name": "pkg", "version": "1.0"}', "unknown keys"),
    "guidellm newer schema": (
        "benchmarks.json",
        lambda: _with(GUIDELLM, metadata={"version": 3}),
        "metadata.version",
    ),
    "guidellm no benchmarks": ("b.json", lambda: _with(GUIDELLM, benchmarks=[]), "empty"),
    "guidellm unknown strategy": (
        "b.json",
        lambda: _with(
            GUIDELLM, benchmarks=[{"config": {"strategy": {"type_": "warp"}}, "metrics": {}}]
        ),
        "type_",
    ),
    "guidellm no config": (
        "b.json",
        lambda: _with(GUIDELLM, benchmarks=[{"metrics": {}}]),
        "benchmarks[0].config",
    ),
    "vllm lists of unequal length": (
        "v.json",
        lambda: _with(DETAILED, ttfts=[0.01]),
        "ttfts",
    ),
    "vllm rate not a number": ("v.json", lambda: _with(VLLM, request_rate="fast"), "request_rate"),
    "vllm completed a string": ("v.json", lambda: _with(VLLM, completed="2"), "completed"),
    "vllm NaN percentile": (
        "v.json",
        lambda: _with(VLLM, median_ttft_ms=float("nan")),
        "not a number",
    ),
    "vllm itls not a list": ("v.json", lambda: _with(DETAILED, itls=3), "itls"),
    "aiperf json without request_count": (
        "profile_export_aiperf.json",
        lambda: _json({"time_to_first_token": {"unit": "ms", "avg": 1.0}, "input_config": {}}),
        "request_count",
    ),
    "aiperf jsonl cut mid-line": (
        "profile_export.jsonl",
        lambda: _json(AIPERF_LINE) + "\n" + _json(AIPERF_LINE)[:30],
        "line 2",
    ),
    "aiperf record without start time": (
        "profile_export.jsonl",
        lambda: _json({**AIPERF_LINE, "metadata": {"benchmark_phase": "profiling"}}),
        "request_start_ns",
    ),
    "aiperf record without ttft": (
        "profile_export.jsonl",
        lambda: _json({**AIPERF_LINE, "metrics": {}}),
        "time_to_first_token",
    ),
    "aiperf csv with a word for a number": (
        "profile_export_aiperf.csv",
        lambda: "Metric,avg,p50\nTime to First Token (ms),fast,1.0\n",
        "not a number",
    ),
    "llama-bench row without avg_ns": (
        "bench.jsonl",
        lambda: _json({"n_prompt": 0, "n_gen": 32, "stddev_ns": 1, "samples_ns": [1]}),
        "avg_ns",
    ),
    "llama-batched-bench row without t_tg": (
        "batched.jsonl",
        lambda: _json({"pl": 1, "pp": 32, "tg": 32, "t_pp": 0.1, "speed_pp": 1.0}),
        "t_tg",
    ),
    "llama-bench jsonl cut short": (
        "bench.jsonl",
        lambda: _half(FIXTURES / "llama_bench_pp32_tg128_r3_t1.jsonl"),
        "not JSON",
    ),
    "foreign YAML": ("b.yaml", lambda: "name: pkg\nversion: 1\n", "unknown keys"),
    "broken YAML": ("b.yaml", lambda: "a: [1, 2\nb: {", "YAML"),
    "real vLLM cut in half": (
        "result.json",
        lambda: _half(PEERS / "vllm-0.32.0" / "c4-detailed" / "result.json"),
        "not valid JSON",
    ),
    "real guidellm cut short": (
        "benchmarks.json",
        lambda: _half(PEERS / "guidellm-0.8.1" / "concurrent-1-4" / "benchmarks.json"),
        "not valid JSON",
    ),
    "real guidellm of a newer schema": (
        "benchmarks.json",
        lambda: _real("guidellm-0.8.1/concurrent-1-4/benchmarks.json", metadata__version=3),
        "'metadata.version' is 3",
    ),
    "real AIPerf of a newer schema": (
        "profile_export_aiperf.json",
        lambda: _real("aiperf-0.13.0/c4/profile_export_aiperf.json", schema_version="2.0"),
        "'schema_version' is '2.0'",
    ),
    "real AIPerf jsonl cut mid-record": (
        "profile_export.jsonl",
        lambda: _half(PEERS / "aiperf-0.13.0" / "c4" / "profile_export.jsonl"),
        "is not JSON (cut short?)",
    ),
    "real vLLM with a start time missing": (
        "result.json",
        lambda: _real("vllm-0.32.0/c1-detailed/result.json", start_times=[0.0]),
        "'start_times' holds 1 values",
    ),
    "mixed JSON lines": ("x.jsonl", lambda: '{"a": 1}\n{"b": 2}\n', "unknown keys"),
    "JSON lines of numbers": ("x.jsonl", lambda: "1\n2\n", "neither JSON"),
}


def _write(tmp_path: Path, name: str, make: Callable[[], bytes | str]) -> Path:
    data = make()
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def test_there_are_at_least_twenty() -> None:
    assert len(BAD) >= 20


@pytest.mark.parametrize("case", sorted(BAD))
def test_refused_in_one_line_and_nothing_written(
    case: str, tmp_path: Path, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, make, word = BAD[case]
    path = _write(tmp_path, name, make)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run_cli("report", str(path))
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0] and word in lines[0], lines[0]
    assert "accepted:" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("case", ["truncated object", "guidellm newer schema", "binary"])
def test_refused_by_the_real_process(case: str, tmp_path: Path) -> None:
    """The installed CLI as a process: exit 2, one stderr line, no traceback."""
    name, make, word = BAD[case]
    path = _write(tmp_path, name, make)
    p = subprocess.run(
        [sys.executable, "-m", "inferlab.cli", "report", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert p.returncode == 2
    assert p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and word in p.stderr
    assert "Traceback" not in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == [name]
