"""The load spine's speed: request specs drawn, and a trace replayed on schedule.

1. Drawing 1,000,000 request specs (gamma arrivals, lognormal prompts with 8 prefix
   groups, uniform outputs) as load/ does for bench and simulate. Target <= 2 s.
2. Replaying a 100 req/s trace against the fake server (a process on this machine):
   the schedule lag (send - scheduled) p99 of the measured requests. Target <= 2 ms.
   On a 2-core machine under load: p50 0.15-0.35 ms; p99 0.6 ms in a quiet spell and
   3-23 ms while other jobs kept the load average at 3-7 (the client's own event-loop
   lag p99 was ~10 ms then: the process waits for a core, whatever it schedules).

    uv run python benchmarks/load_specs.py [--replay-s 10] [--rate 100]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from inferlab.load.lengths import LengthDist
from inferlab.load.spec import Level
from inferlab.load.workload import Prefix, Workload

SPECS_TARGET_S = 2.0
LAG_TARGET_S = 0.002


def time_specs(n: int) -> float:
    w = Workload(
        LengthDist.parse("lognormal:800:0.8", "--prompt-tokens", 32_768),
        LengthDist.parse("uniform:16:512", "--output-tokens", 32_768),
        (Level("rate", 100.0),),
        requests_per_level=n,
        arrival="gamma",
        burstiness=0.5,
        prefix=Prefix(8, 256),
    )
    t0 = time.perf_counter()
    reqs = w.requests(Level("rate", 100.0))
    dt = time.perf_counter() - t0
    assert len(reqs) == n
    return dt


def replay_lag(rate: float, seconds: float) -> tuple[int, dict[str, float | None], float | None]:
    """Bench replays a generic trace at `rate` for `seconds`; (requests, lag stats, achieved)."""
    from inferlab.bench.benchmark import BenchConfig, event_loop_runner, run_benchmark
    from inferlab.load.traces import read_trace, shape_trace
    from inferlab.load.workload import TraceLoad
    from inferlab.testing.fake_server import running_fake_server

    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "trace.csv"
        n = int(rate * seconds)
        rows = [f"{i / rate:.6f},16,8" for i in range(n)]
        csv.write_text("timestamp_s,prompt_tokens,output_tokens\n" + "\n".join(rows) + "\n")
        trace = TraceLoad(shape_trace(read_trace(str(csv))), str(csv))
        level = Level("trace", 0.0, "trace")
        with running_fake_server(ttft=0.01, tpot=0.005) as url:
            w = Workload(
                LengthDist.parse("16", "--prompt-tokens", 100),
                LengthDist.parse("8", "--output-tokens", 100),
                (level,),
                warmup=4,
                trace=trace,
            )
            cfg = BenchConfig(url, None, w, out_dir=Path(tmp) / "run", scrape=False)
            result = event_loop_runner()(run_benchmark(cfg))
    lv = result.summary.levels[0]
    lag = lv.schedule_lag_s
    stats = {"p50": lag.p50, "p99": lag.p99, "max": lag.max} if lag else {}
    return lv.requests_measured, stats, lv.achieved_rate_per_s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--specs", type=int, default=1_000_000)
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--replay-s", type=float, default=10.0)
    a = p.parse_args()
    dt = time_specs(a.specs)
    verdict = "met" if dt <= SPECS_TARGET_S else "NOT met"
    print(
        f"{a.specs:,} request specs drawn in {dt:.3f} s (target <= {SPECS_TARGET_S:g} s: {verdict})"
    )
    load1 = os.getloadavg()[0]
    n, lag, achieved = replay_lag(a.rate, a.replay_s)
    ms = {k: (v or 0.0) * 1e3 for k, v in lag.items()}
    p99 = lag.get("p99") or 0.0
    verdict = "met" if p99 <= LAG_TARGET_S else "NOT met"
    print(
        f"trace replay at {a.rate:g} req/s for {a.replay_s:g} s against the fake server: "
        f"{n} requests, achieved {achieved or 0:.2f} req/s; schedule lag p50 {ms['p50']:.3f} ms, "
        f"p99 {ms['p99']:.3f} ms, max {ms['max']:.3f} ms "
        f"(target p99 <= {LAG_TARGET_S * 1e3:g} ms: {verdict}); load average "
        f"{load1:.1f} on {os.cpu_count()} cores before the replay (the tail follows it)"
    )


if __name__ == "__main__":
    main()
