"""`inferlab engine-bench`: the engine alone (llama.cpp's own benchmarks), no HTTP, no scheduler.

The middle column between the floor and a served TPOT: the step time per batch
from llama-batched-bench and the lone prefill and generation (with their
run-to-run noise) from llama-bench, with the same model, threads, context and
lengths as a sweep. The result goes to DIR/engine_bench.json, which
`inferlab bench --engine-baseline DIR` reads.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.commands.flags.argtypes import TIME, int_list
from inferlab.errors import InferlabError
from inferlab.metrics.runfolder import result_folder

if TYPE_CHECKING:
    from inferlab.engines.llama_bench import EngineBenchConfig

QUICK_MAX_BATCH = 4
QUICK_OUTPUT_TOKENS = 32


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "engine-bench", help="llama.cpp's own step time per batch and prefill (no server)"
    )
    p.add_argument("--gguf", type=Path, help="the model file (the bundled SmolLM2 if omitted)")
    p.add_argument("--threads", type=int, help="threads, as the server's (all cores but one)")
    p.add_argument("--batch", type=int_list, default=[1, 2, 4, 8, 16], help="batches (1,2,4,8,16)")
    p.add_argument("--prompt", type=int, default=32, help="prompt tokens per sequence (32)")
    p.add_argument("--output", type=int, default=128, help="generated tokens per sequence (128)")
    p.add_argument("--ctx-per-slot", type=int, help="KV cells per sequence (prompt+output+64)")
    p.add_argument(
        "--context-prompts",
        type=int_list,
        help="longer prompts the batches are measured after, for the step's growth with "
        "context (4x --prompt; 0 for none)",
    )
    p.add_argument("--repetitions", type=int, default=3, help="llama-bench repetitions (3)")
    p.add_argument(
        "--passes", type=int, default=2, help="batched-bench passes, the fastest kept (2)"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"batches <= {QUICK_MAX_BATCH}, {QUICK_OUTPUT_TOKENS} output tokens, 2 repetitions",
    )
    p.add_argument("--timeout", type=TIME, default=600.0, help="both binaries in all (600s)")
    p.add_argument("--bin-dir", type=Path, help="folder holding the llama.cpp binaries")
    p.add_argument("--out", type=Path, help="results folder (results/engine-<time>)")
    p.add_argument("--overwrite", action="store_true", help="replace DIR/engine_bench.json")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(run=run)


def config_from(args: argparse.Namespace) -> EngineBenchConfig:
    from inferlab.engines.bundled import smollm2_gguf_path
    from inferlab.engines.llama_bench import EngineBenchConfig

    batches, output, reps = tuple(args.batch), args.output, args.repetitions
    if args.quick:
        batches = tuple(b for b in batches if b <= QUICK_MAX_BATCH) or (min(batches),)
        output, reps = min(output, QUICK_OUTPUT_TOKENS), 2
    if args.threads is not None and args.threads < 1:
        raise InferlabError("--threads must be >= 1")
    return EngineBenchConfig(
        gguf=args.gguf or smollm2_gguf_path(),
        threads=args.threads or max(1, (os.cpu_count() or 2) - 1),
        batches=batches,
        prompt_tokens=args.prompt,
        output_tokens=output,
        ctx_per_slot=args.ctx_per_slot or args.prompt + output + 64,
        repetitions=reps,
        passes=args.passes,
        timeout_s=args.timeout,
        bin_dir=args.bin_dir,
        context_prompts=_context_prompts(args.context_prompts),
    )


def _context_prompts(given: list[int] | None) -> tuple[int, ...] | None:
    if given is None:
        return None  # the default: 4x the prompt
    if given == [0]:
        return ()
    if min(given) < 1:
        raise InferlabError("--context-prompts takes prompt lengths >= 1, e.g. 128,512 (0: none)")
    return tuple(given)


def run(args: argparse.Namespace) -> int:
    from inferlab.console import engine_text
    from inferlab.engines.llama_bench import RESULT_NAME, batched_command, run_engine_bench
    from inferlab.jsonio import dumps, write_json

    cfg = config_from(args)
    out = result_folder(args.out, "engine", RESULT_NAME, args.overwrite)
    say = sys.stderr if args.json else sys.stdout
    print(f"engine alone: {' '.join(batched_command(cfg)[1:])} (+ llama-bench)", file=say)
    eb = run_engine_bench(cfg)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / RESULT_NAME, eb)
    print("\n".join(engine_text.result_lines(eb)), file=say)
    print(
        f"saved: {out / RESULT_NAME} (use: inferlab bench --engine-baseline {out}, "
        f"inferlab simulate --engine-baseline {out})",
        file=say,
    )
    if args.json:
        print(dumps(eb))
    return 0
