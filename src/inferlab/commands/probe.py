"""`inferlab probe`: measure this machine's bandwidth and FLOPS, save them as `this-machine`."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from inferlab.commands.flags.argtypes import BYTES, whole
from inferlab.commands.flags.output import add_output, emit, table
from inferlab.errors import InferlabError
from inferlab.units import fmt_bandwidth, fmt_bytes, fmt_flops

if TYPE_CHECKING:
    from inferlab.probe.machine import ProbeResult


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("probe", help="measure this machine's memory bandwidth and FLOPS")
    p.add_argument("--array-bytes", type=BYTES, default=float(1 << 30), help="per array (1GiB)")
    p.add_argument(
        "--repeats", type=whole(1, 1000), default=10, help="passes; the best is kept (10)"
    )
    p.add_argument("--no-gpu", action="store_true", help="skip the torch GPU probe")
    add_output(p)
    p.set_defaults(run=run)


def probe_rows(r: ProbeResult) -> list[tuple[str, str]]:
    bw, fl = r.bandwidth, r.flops
    rows = [
        ("cpu", f"{r.cpu}, {r.cores} cores, {fmt_bytes(r.memory_bytes)} RAM"),
        (
            "read bandwidth",
            f"{fmt_bandwidth(bw.read_bytes_per_s)}  <- the floor uses this "
            f"(median {fmt_bandwidth(bw.median_read_bytes_per_s)})",
        ),
        ("copy bandwidth", f"{fmt_bandwidth(bw.copy_bytes_per_s)} (read + write counted)"),
        ("triad bandwidth", f"{fmt_bandwidth(bw.triad_bytes_per_s)} (read + write counted)"),
        ("matmul fp32", fmt_flops(fl.fp32_flops_per_s)),
        ("matmul fp64", fmt_flops(fl.fp64_flops_per_s)),
    ]
    if r.gpu is not None:
        g = r.gpu
        rows += [
            ("gpu", f"{g.name}, {fmt_bytes(g.memory_bytes)} ({g.library})"),
            ("gpu read bandwidth", fmt_bandwidth(g.read_bytes_per_s)),
            ("gpu copy bandwidth", fmt_bandwidth(g.copy_bytes_per_s)),
            ("gpu matmul bf16", fmt_flops(g.bf16_flops_per_s)),
        ]
    return rows


METHOD = [
    "method: STREAM-style kernels over arrays far larger than the last-level cache, one",
    "numpy thread per core; two warm-up passes excluded; best of the repeats (noise on a",
    "shared machine only slows runs), median kept. Bytes: read = |a|; copy = read + write.",
    "Decode streams weights and KV in and writes almost nothing, so the floor divides",
    "bytes per step by the READ rate, not by a copy rate that counts writes too.",
]


def check_array_bytes(n: float) -> None:
    """Three arrays of this size live at once (triad): keep them well inside RAM."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 16 << 30
    top = ram // 4
    if not (1 << 20) <= n <= top:
        raise InferlabError(
            f"--array-bytes {fmt_bytes(n)}: give 1MiB to {fmt_bytes(top)} (a quarter of RAM)"
        )


def run(args: argparse.Namespace) -> int:
    from inferlab.probe.machine import run_probe, save
    from inferlab.specs.hardware import this_machine_path

    check_array_bytes(args.array_bytes)
    r = run_probe(int(args.array_bytes), args.repeats, gpu=not args.no_gpu)
    save(r)
    rows = probe_rows(r)
    rows.append(("saved", f"{this_machine_path()} (use --hardware this-machine)"))
    rows.append(("took", f"{r.seconds:.1f} s"))
    emit(args, r.to_json(), table(rows) + [""] + METHOD, METHOD)
    return 0
