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


def guidellm_latency(stdout: Path) -> dict[str, dict[str, float]]:
    """guidellm's "Request Latency Statistics" table: strategy -> {ttft_mdn, itl_mdn} (ms),
    and "Server Throughput Statistics": output tok/s (mean) and completed requests."""
    text = stdout.read_text(encoding="utf-8")
    out: dict[str, dict[str, float]] = {}

    def rows(title: str) -> list[list[str]]:
        block = text[text.index(title) :].split("\n\n")[0]
        got = []
        for line in block.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and "@" in cells[0]:
                got.append(cells)
        return got

    for c in rows("Request Latency Statistics"):
        # Strategy | E2E mean, mdn, p95 | TTFT mean, mdn, p95 | TTFOT ... | ITL ... | TPOT ...
        out.setdefault(c[0], {}).update(ttft_mdn=float(c[5]), itl_mdn=float(c[11]))
    for c in rows("Server Throughput Statistics"):
        out[c[0]]["output_tok_s"] = float(c[5])
    for c in rows("Run Summary Info"):
        out[c[0]]["completed"] = float(c[6])
    return out
