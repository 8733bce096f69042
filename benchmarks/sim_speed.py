"""Simulator speed: simulated requests per wall-clock second for a one-hour Poisson load.

Target: one hour at 20 requests/s (72,000 requests) in at most 8 s on one core.
Before and after the load spine (issue 19), side by side in one run: "before" is
this benchmark at commit 1b5f1a8 run on that commit's own code (extracted with git
archive, in a subprocess); "after" is the current code, arrivals drawn by load/ as
bench and simulate draw them. They alternate (--repeats) and the best of each is
kept, since a shared machine's load changes by the minute. The README's figure
before the change: 4.82 s in total.
Llama 3 8B on an H100 (roofline step time), continuous batching with chunked
prefill of 512, prompts 500 and outputs 200 tokens. Phases timed separately:
the event loop, gathering every token time and building the per-request records
(what `simulate --out` writes), and the level summary (numpy over the arrays).

    uv run python benchmarks/sim_speed.py [--rate 20] [--hours 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from inferlab.load.lengths import LengthDist
from inferlab.load.spec import Level
from inferlab.load.workload import Workload
from inferlab.sim.engine import simulate
from inferlab.sim.output import TokenTimes, summarize_result, to_records
from inferlab.sim.scheduler import Policy
from inferlab.sim.steptime.roofline import RooflineStepTime
from inferlab.sim.workload import Arrival, arrivals_of
from inferlab.specs.cost import derive_cost
from inferlab.specs.hardware import get_hardware
from inferlab.specs.model import load_preset

TARGET_S = 8.0
README_TOTAL_S = 4.82  # the README's figure before the load spine
BEFORE_REV = "1b5f1a8"  # the last commit before load/ (issue 19)


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
    lv = summarize_result(res, Level("rate", a.rate, "bench"), times)
    lap()
    print(
        f"  {arrivals.__name__}: {len(arr)} requests, {res.steps} engine steps, "
        f"TPOT p50 {(lv.tpot_s.p50 or 0) * 1e3:.2f} ms"
    )
    names = ("arrivals", "event loop", "records", "summary")
    out = {n: (t[i + 1] - t[i], c[i + 1] - c[i]) for i, n in enumerate(names)}
    out["total"] = (t[-1] - t[0], c[-1] - c[0])
    return out


def before_change(a: argparse.Namespace, rev: str) -> tuple[float, float] | None:
    """This benchmark as it stood at `rev`, on that commit's own code (git archive into a
    temporary folder, run in a subprocess): its total wall and CPU seconds, or None."""
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            archive = subprocess.run(
                ["git", "-C", str(repo), "archive", rev, "src", "benchmarks/sim_speed.py"],
                capture_output=True,
                check=True,
                timeout=60,
            ).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True, timeout=60)
            out = subprocess.run(
                [
                    sys.executable,
                    f"{tmp}/benchmarks/sim_speed.py",
                    "--rate",
                    str(a.rate),
                    "--hours",
                    str(a.hours),
                ],
                env={**os.environ, "PYTHONPATH": f"{tmp}/src"},
                capture_output=True,
                text=True,
                check=True,
                timeout=600,
            ).stdout
        except (OSError, subprocess.SubprocessError) as e:
            print(f"  before ({rev}): not run ({type(e).__name__}: {e})")
            return None
    total = next(line.split() for line in out.splitlines() if line.startswith("total"))
    return float(total[1]), float(total[2])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=20.0)
    p.add_argument("--hours", type=float, default=1.0)
    p.add_argument("--before", default=BEFORE_REV, help=f"the commit before ({BEFORE_REV})")
    p.add_argument("--repeats", type=int, default=2, help="alternating runs each; best kept (2)")
    a = p.parse_args()
    print(f"{a.rate:g}/s x {a.hours:g} h, Llama 3 8B on an H100, chunked prefill 512:")
    befores, afters = [], []
    for _ in range(a.repeats):  # alternate, so a busy spell on a shared machine hits both
        b = before_change(a, a.before)
        if b is not None:
            befores.append(b)
        afters.append(run_once(arrivals_after, a))
    best = {k: min((r[k] for r in afters), key=lambda x: x[0]) for k in afters[0]}
    print(f"{'phase':<12}{'after s':>10}{'cpu s':>8}")
    for name, (w, c) in best.items():
        print(f"{name:<12}{w:>10.2f}{c:>8.2f}")
    total = best["total"][0]
    before = f"{min(befores)[0]:.2f} s (cpu {min(befores)[1]:.2f})" if befores else "not run"
    print(
        f"total, best of {a.repeats}: before ({a.before}) {before}, after {total:.2f} s "
        f"(cpu {best['total'][1]:.2f}); the README stated {README_TOTAL_S:g} s before the change"
    )
    verdict = "met" if total <= TARGET_S else "NOT met"
    print(f"target: {a.rate * 3600 * a.hours:.0f} requests in <= {TARGET_S:g} s -> {verdict}")


if __name__ == "__main__":
    main()
