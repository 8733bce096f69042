"""Simulator speed: simulated requests per wall-clock second for a one-hour Poisson load.

Target: one hour at 20 requests/s (72,000 requests) in at most 8 s on one core.
Llama 3 8B on an H100 (roofline step time), continuous batching with chunked
prefill of 512, prompts 500 and outputs 200 tokens. Phases timed separately:
the event loop, gathering every token time and building the per-request records
(what `simulate --out` writes), and the level summary (numpy over the arrays).

    uv run python benchmarks/sim_speed.py [--rate 20] [--hours 1]
"""

from __future__ import annotations

import argparse
import random
import time

from inferlab.sim.engine import simulate
from inferlab.sim.output import LoadLabel, TokenTimes, summarize_result, to_records
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime import RooflineStepTime
from inferlab.sim.workload import Lengths, open_loop
from inferlab.specs.cost import derive_cost
from inferlab.specs.hardware import get_hardware
from inferlab.specs.model import load_preset

TARGET_S = 8.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=20.0)
    p.add_argument("--hours", type=float, default=1.0)
    a = p.parse_args()
    hw = get_hardware("h100-sxm")
    cost = derive_cost(load_preset("llama-3-8b"))
    model = RooflineStepTime(cost, hw)
    arr = open_loop(a.rate, a.hours * 3600, Lengths(500, 500), Lengths(200, 200), random.Random(0))
    kv_tokens = int(60e9 // cost.kv_bytes_per_token)
    # Wall and CPU seconds: on a shared machine the CPU time is the steadier figure.
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(arr, model, Policy("continuous", chunk_tokens=512, kv_capacity_tokens=kv_tokens))
    t1, c1 = time.perf_counter(), time.process_time()
    times = TokenTimes.of(res)
    recs = to_records(res, "bench", times)
    t2, c2 = time.perf_counter(), time.process_time()
    lv = summarize_result(res, LoadLabel("bench", "rate", a.rate), times)
    t3, c3 = time.perf_counter(), time.process_time()
    n = len(arr)
    print(
        f"{n} requests over {a.hours:g} h at {a.rate:g}/s; {res.steps} engine steps; "
        f"{len(recs)} records; TPOT p50 {(lv.tpot_s.p50 or 0) * 1e3:.2f} ms, "
        f"gap max {(lv.gap_s.max or 0) * 1e3:.1f} ms"
    )
    print(f"{'phase':<12}{'seconds':>9}{'cpu s':>8}{'requests/s':>12}")
    for name, dt, cpu in (
        ("event loop", t1 - t0, c1 - c0),
        ("records", t2 - t1, c2 - c1),
        ("summary", t3 - t2, c3 - c2),
        ("total", t3 - t0, c3 - c0),
    ):
        print(f"{name:<12}{dt:>9.2f}{cpu:>8.2f}{n / dt:>12.0f}")
    verdict = "met" if t3 - t0 <= TARGET_S else "NOT met"
    print(
        f"target: {a.rate * 3600 * a.hours:.0f} requests in <= {TARGET_S:g} s -> "
        f"{verdict} ({t3 - t0:.1f} s)"
    )


if __name__ == "__main__":
    main()
