"""Simulator speed: simulated requests per wall-clock second for a one-hour Poisson load.

Target: one hour at 20 requests/s (72,000 requests) in at most 8 s on one core.
Before and after the load spine (issue 19), side by side in one run: "before" draws
the arrivals as sim/workload.py did at 1b5f1a8 (random.Random, one request at a
time); "after" draws them as load/ does for bench and simulate alike (numpy
columns), then both run the same engine, records and summary. The README's
figure before the change: 4.82 s in total.
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
from typing import Any

from inferlab.load.lengths import LengthDist
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.sim.engine import simulate
from inferlab.sim.output import LoadLabel, TokenTimes, summarize_result, to_records
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime import RooflineStepTime
from inferlab.sim.workload import Arrival, arrivals_of
from inferlab.specs.cost import derive_cost
from inferlab.specs.hardware import get_hardware
from inferlab.specs.model import load_preset

TARGET_S = 8.0
README_TOTAL_S = 4.82  # the README's figure before the load spine


def arrivals_before(rate: float, duration_s: float) -> list[Arrival]:
    """The arrivals as sim/workload.py drew them before (1b5f1a8), for the side by side."""
    rng = random.Random(0)
    out: list[Arrival] = []
    t = 0.0
    while True:
        t += rng.expovariate(rate)
        if t >= duration_s:
            return out
        out.append(Arrival(t, 500, 200))


def arrivals_after(rate: float, duration_s: float) -> list[Arrival]:
    """The arrivals as load/ draws them now (the same for bench and simulate)."""
    w = Workload(
        LengthDist.parse("500", "--prompt-tokens", 10**6),
        LengthDist.parse("200", "--output-tokens", 10**6),
        (Level("rate", rate),),
        duration_s=duration_s,
    )
    return arrivals_of(w.requests(Level("rate", rate)))


def run_once(arrivals: Any, a: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds of each phase, arrivals drawn first (they are part of the work)."""
    hw = get_hardware("h100-sxm")
    cost = derive_cost(load_preset("llama-3-8b"))
    model = RooflineStepTime(cost, hw)
    kv_tokens = int(60e9 // cost.kv_bytes_per_token)
    # Wall and CPU seconds: on a shared machine the CPU time is the steadier figure.
    t, c = [time.perf_counter()], [time.process_time()]

    def lap() -> None:
        t.append(time.perf_counter())
        c.append(time.process_time())

    arr = arrivals(a.rate, a.hours * 3600)
    lap()
    res = simulate(arr, model, Policy("continuous", chunk_tokens=512, kv_capacity_tokens=kv_tokens))
    lap()
    times = TokenTimes.of(res)
    to_records(res, "bench", times)
    lap()
    lv = summarize_result(res, LoadLabel("bench", "rate", a.rate), times)
    lap()
    print(
        f"  {arrivals.__name__}: {len(arr)} requests, {res.steps} engine steps, "
        f"TPOT p50 {(lv.tpot_s.p50 or 0) * 1e3:.2f} ms"
    )
    names = ("arrivals", "event loop", "records", "summary")
    out = {n: (t[i + 1] - t[i], c[i + 1] - c[i]) for i, n in enumerate(names)}
    out["total"] = (t[-1] - t[0], c[-1] - c[0])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=20.0)
    p.add_argument("--hours", type=float, default=1.0)
    a = p.parse_args()
    print(f"one hour at {a.rate:g}/s x {a.hours:g} h, Llama 3 8B on an H100, chunked prefill 512:")
    before = run_once(arrivals_before, a)
    after = run_once(arrivals_after, a)
    print(f"{'phase':<12}{'before s':>10}{'cpu s':>8}{'after s':>10}{'cpu s':>8}")
    for name in before:
        (bw, bc), (aw, ac) = before[name], after[name]
        print(f"{name:<12}{bw:>10.2f}{bc:>8.2f}{aw:>10.2f}{ac:>8.2f}")
    total = after["total"][0]
    verdict = "met" if total <= TARGET_S else "NOT met"
    print(
        f"target: {a.rate * 3600 * a.hours:.0f} requests in <= {TARGET_S:g} s -> {verdict} "
        f"({total:.1f} s after, {before['total'][0]:.1f} s before in this run; "
        f"the README states {README_TOTAL_S:g} s before the change)"
    )


if __name__ == "__main__":
    main()
