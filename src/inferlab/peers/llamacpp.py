"""llama.cpp's engine-alone tools, read as a baseline with no server in the way.

- `llama-batched-bench --output-format jsonl`: one row per batch B; B prompts prefilled
  together (TTFT = `t_pp`), then B streams decoded together (TPOT = `t_tg` / `tg`).
- `llama-bench -o json|jsonl`: a lone prefill (`pp`) and a lone generation (`tg`),
  repeated; one level at batch 1 per generation test, its TTFT the prefill test's mean.

Parsed by engines/llama_bench.py (the code `inferlab engine-bench` runs them with).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeGuard

from inferlab.engines.llama_bench import parse_batched_bench, parse_llama_bench
from inferlab.engines.result import EngineBenchError
from inferlab.peers.common import (
    Aggregates,
    PeerFormatError,
    PeerLevel,
    PeerRun,
    level_from_aggregates,
    source,
)
from inferlab.summary import LatencyStats

BATCHED, BENCH = "llama-batched-bench", "llama-bench"


def looks_batched(rows: object) -> TypeGuard[list[object]]:
    return isinstance(rows, list) and bool(rows) and isinstance(rows[0], dict) and "pl" in rows[0]


def looks_bench(rows: object) -> TypeGuard[list[object]]:
    return (
        isinstance(rows, list) and bool(rows) and isinstance(rows[0], dict) and "n_gen" in rows[0]
    )


def _one(x: float) -> LatencyStats:
    """A single timed figure (the tool's mean): p50 and mean, one sample."""
    return LatencyStats(x, None, None, None, None, None, x, 1)


def read_batched(path: Path, text: str) -> PeerRun:
    try:
        steps = parse_batched_bench(text)
    except EngineBenchError as e:
        raise PeerFormatError(path, str(e)) from None
    levels = []
    for s in steps:
        a = Aggregates(
            label=f"B={s.batch} pp{s.prompt_tokens} tg{s.output_tokens}",
            kind="concurrency",
            value=float(s.batch),
            requests_ok=s.batch,
            requests_failed=0,
            ttft_s=_one(s.prefill_s),
            tpot_s=_one(s.step_time_s),
            e2e_s=_one(s.prefill_s + s.decode_s),
            itl_s=LatencyStats.empty(),
            output_tokens=s.batch * s.output_tokens,
            window_s=s.decode_s,
            output_tokens_per_s=s.tokens_per_s_total,
        )
        levels.append(level_from_aggregates(a, source(BATCHED, None, path, False), s.prompt_tokens))
    return PeerRun(BATCHED, None, path, None, tuple(levels))


def _avg_ts(text: str) -> dict[str, float]:
    """llama-bench's own tokens/s per generation test (`avg_ts`: the mean of each sample's
    rate, not tokens / mean time), as it printed them."""
    body = text.strip()
    rows = (
        json.loads(body)
        if body.startswith("[")
        else [json.loads(x) for x in body.splitlines() if x.strip()]
    )
    return {
        f"tg{r['n_gen']}": float(r["avg_ts"])
        for r in rows
        if r.get("n_prompt") == 0 and isinstance(r.get("avg_ts"), int | float)
    }


def read_bench(path: Path, text: str) -> PeerRun:
    try:
        tests, facts = parse_llama_bench(text)
    except EngineBenchError as e:
        raise PeerFormatError(path, str(e)) from None
    version = facts.get("build")
    stated = _avg_ts(text)
    prefills = [t for t in tests if t.test.startswith("pp") and "+" not in t.test]
    prompt = prefills[0] if len(prefills) == 1 else None
    levels: list[PeerLevel] = []
    for t in tests:
        if not t.test.startswith("tg"):
            continue
        a = Aggregates(
            label=f"B=1 {t.test}",
            kind="concurrency",
            value=1.0,
            requests_ok=1,
            requests_failed=0,
            ttft_s=_one(prompt.mean_s) if prompt else LatencyStats.empty(),
            tpot_s=_one(t.per_token_s),
            e2e_s=LatencyStats.empty(),
            itl_s=LatencyStats.empty(),
            output_tokens=t.n_tokens,
            window_s=t.mean_s,
            output_tokens_per_s=stated.get(t.test, t.tokens_per_s),
        )
        n_prompt = float(prompt.n_tokens) if prompt else None
        levels.append(level_from_aggregates(a, source(BENCH, version, path, False), n_prompt))
    if not levels:
        raise PeerFormatError(path, "no generation test (n_gen > 0) among its rows")
    return PeerRun(BENCH, version, path, None, tuple(levels))
