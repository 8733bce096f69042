"""What a peer tool printed (its stdout.txt beside the fixture), as numbers, so a test
holds the figures read from its files against the tool's own console, to its rounding."""

from __future__ import annotations

import re
from pathlib import Path


def aiperf_table(stdout: Path) -> dict[str, dict[str, float]]:
    """AIPerf's last "LLM Metrics" table: metric -> {avg, min, max, p99, p90, p50, std}
    (a cell reading N/A is left out; thousands separators removed)."""
    text = stdout.read_text(encoding="utf-8")
    table = text[text.rindex("LLM Metrics") :]
    head: list[str] = []
    out: dict[str, dict[str, float]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if not cells:
            continue
        if cells[0] == "Metric":
            head = cells[1:]
            continue
        if not cells[0] or not head:
            continue
        row = {}
        for name, cell in zip(head, cells[1:], strict=False):
            if cell and cell != "N/A":
                row[name] = float(cell.replace(",", ""))
        if row:
            out[cells[0]] = row
    return out


def decimals(x: float, places: int = 2) -> float:
    return round(x, places)


def vllm_table(stdout: Path) -> dict[str, float]:
    """vLLM's "Serving Benchmark Result" block: "Median TTFT (ms):  833.75" -> {name: value}."""
    text = stdout.read_text(encoding="utf-8")
    block = text[text.rindex("Serving Benchmark Result") :]
    out = {}
    for line in block.splitlines():
        name, sep, value = line.partition(":")
        if sep and value.strip():
            try:
                out[name.strip()] = float(value.strip())
            except ValueError:
                continue
    return out
