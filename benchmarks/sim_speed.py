"""Simulator speed: simulated requests per wall-clock second for a one-hour Poisson load.

Target: one hour at 20 requests/s (72,000 requests) in under 30 s on one core.
Llama 3 8B on an H100 (roofline step time), continuous batching with chunked
prefill of 512, prompts 500 and outputs 200 tokens. Phases timed separately:
the event loop, turning its result into per-request records, the summary.

    uv run python benchmarks/sim_speed.py [--rate 20] [--hours 1]
"""

from __future__ import annotations

import argparse
import random
import time

from inferlab.metrics.level import summarize_level
from inferlab.sim.engine import Policy, simulate
from inferlab.sim.output import to_records
from inferlab.sim.steptime import RooflineStepTime
from inferlab.sim.workload import Lengths, open_loop
from inferlab.specs.cost import derive_cost
from inferlab.specs.hardware import get_hardware
from inferlab.specs.model import load_preset


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=20.0)
    p.add_argument("--hours", type=float, default=1.0)
    a = p.parse_args()
    hw = get_hardware("h100-sxm")
    cost = derive_cost(load_preset("llama-3-8b"))
    model = RooflineStepTime(cost, hw)
    arr = open_loop(a.rate, a.hours * 3600, Lengths(500, 500), Lengths(200, 200), random.Random(0))
    t0 = time.perf_counter()
    res = simulate(
        arr,
        model,
        Policy(
            "continuous", chunk_tokens=512, kv_capacity_tokens=int(60e9 // cost.kv_bytes_per_token)
        ),
    )
    t1 = time.perf_counter()
    recs = to_records(res, "bench")
    t2 = time.perf_counter()
    lv = summarize_level("bench", "rate", a.rate, recs)
    t3 = time.perf_counter()
    n = len(arr)
    print(
        f"{n} requests over {a.hours:g} h at {a.rate:g}/s; {res.steps} engine steps; "
        f"TPOT p50 {(lv.tpot_s.p50 or 0) * 1e3:.2f} ms, gap max {(lv.gap_s.max or 0) * 1e3:.1f} ms"
    )
    print(f"{'phase':<12}{'seconds':>9}{'requests/s':>12}")
    for name, dt in (
        ("event loop", t1 - t0),
        ("records", t2 - t1),
        ("summary", t3 - t2),
        ("total", t3 - t0),
    ):
        print(f"{name:<12}{dt:>9.2f}{n / dt:>12.0f}")
    print(
        f"target: {a.rate * 3600 * a.hours:.0f} requests in < 30 s -> "
        f"{'met' if t3 - t0 < 30 else 'NOT met'} ({t3 - t0:.1f} s)"
    )


if __name__ == "__main__":
    main()
