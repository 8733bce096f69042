"""`inferlab serve`: the embedded llama.cpp server with the bundled SmolLM2 model.

Ctrl-C, SIGTERM and SIGHUP stop the server; it also dies with this process if
that is killed outright. Its log goes to --log or the user's state directory.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from inferlab import signals
from inferlab.commands.flags.argtypes import whole
from inferlab.engines.llama_server import LlamaServer, ServerOptions
from inferlab.errors import InferlabError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the embedded llama.cpp server (SmolLM2-135M Q4_1)")
    p.add_argument("--gguf", type=Path, help="another GGUF file instead of the bundled one")
    p.add_argument("--port", type=whole(0, 65535), help="port on 127.0.0.1 (a free one if omitted)")
    p.add_argument(
        "--parallel", type=whole(1, 4096), default=4, help="slots = concurrent streams (4)"
    )
    p.add_argument(
        "--ctx-size",
        type=whole(1, 10**9),
        help="context tokens of all slots together, as llama-server's and simulate's "
        "--ctx-size (1024 per slot: 4096 with 4 slots)",
    )
    # The former flag: tokens per slot. Kept, hidden, for one release.
    p.add_argument("--ctx-per-slot", type=whole(1, 10**8), help=argparse.SUPPRESS)
    p.add_argument("--threads", type=whole(1, 4096), help="CPU threads (all cores but one)")
    p.add_argument(
        "--log", type=Path, help="server log file (<user state dir>/inferlab/logs/... if omitted)"
    )
    p.set_defaults(run=run)


DEFAULT_CTX_PER_SLOT = 1024


def ctx_per_slot(args: argparse.Namespace) -> int:
    """--ctx-size split over the slots (or the hidden --ctx-per-slot, as before)."""
    if args.ctx_size is not None and args.ctx_per_slot is not None:
        raise InferlabError("give --ctx-size (all slots), not --ctx-per-slot as well")
    if args.ctx_per_slot is not None:
        return int(args.ctx_per_slot)
    if args.ctx_size is None:
        return DEFAULT_CTX_PER_SLOT
    if args.ctx_size < args.parallel:
        raise InferlabError(
            f"--ctx-size {args.ctx_size}: fewer tokens than --parallel {args.parallel} slots"
        )
    return int(args.ctx_size // args.parallel)


def run(args: argparse.Namespace) -> int:
    opts = ServerOptions(
        args.gguf, args.port, args.parallel, ctx_per_slot(args), args.threads, args.log
    )
    srv = LlamaServer(opts)
    signals.kept(f"llama-server stopped; its log is {srv.log_path}")  # also if stopped loading
    with srv:
        print(
            f"llama-server ready: {srv.base_url}  ({srv.gguf.name}, {opts.parallel} slots, "
            f"{srv.threads} threads, log {srv.log_path}); Ctrl-C or SIGTERM stops it"
        )
        print(
            f"try: uv run inferlab bench --url {srv.base_url}  (a few minutes; it finds "
            "this server's GGUF for the floor)",
            flush=True,  # a supervisor reading a pipe sees the URL now, not at exit
        )
        while srv.alive():
            time.sleep(0.5)
        print(
            f"llama-server exited ({srv.proc.returncode if srv.proc else '?'}); see {srv.log_path}"
        )
        return 1
