"""`inferlab serve`: the embedded llama.cpp server with the bundled SmolLM2 model.

Ctrl-C, SIGTERM and SIGHUP stop the server; it also dies with this process if
that is killed outright. Its log goes to --log or the user's state directory.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from inferlab import signals
from inferlab.commands.common import whole
from inferlab.engines.llama_server import LlamaServer, ServerOptions


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the embedded llama.cpp server (SmolLM2-135M Q4_1)")
    p.add_argument("--gguf", type=Path, help="another GGUF file instead of the bundled one")
    p.add_argument("--port", type=whole(0, 65535), help="port on 127.0.0.1 (a free one if omitted)")
    p.add_argument(
        "--parallel", type=whole(1, 4096), default=4, help="slots = concurrent streams (4)"
    )
    p.add_argument(
        "--ctx-per-slot", type=whole(1, 10**8), default=1024, help="context tokens per slot"
    )
    p.add_argument("--threads", type=whole(1, 4096), help="CPU threads (all cores but one)")
    p.add_argument(
        "--log", type=Path, help="server log file (<user state dir>/inferlab/logs/... if omitted)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    opts = ServerOptions(
        args.gguf, args.port, args.parallel, args.ctx_per_slot, args.threads, args.log
    )
    srv = LlamaServer(opts)
    signals.kept(f"llama-server stopped; its log is {srv.log_path}")  # also if stopped loading
    with srv:
        print(
            f"llama-server ready: {srv.base_url}  ({srv.gguf.name}, {opts.parallel} slots, "
            f"{srv.threads} threads, log {srv.log_path}); Ctrl-C or SIGTERM stops it"
        )
        print(
            f"try: uv run inferlab bench --url {srv.base_url} --concurrency 1,2,4 "
            f"--floor-gguf {srv.gguf} --floor-hardware this-machine",
            flush=True,  # a supervisor reading a pipe sees the URL now, not at exit
        )
        while srv.alive():
            time.sleep(0.5)
        print(
            f"llama-server exited ({srv.proc.returncode if srv.proc else '?'}); see {srv.log_path}"
        )
        return 1
