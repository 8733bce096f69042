"""Does the machine canary tell a slower machine from a slower server, run against run?

    uv run python benchmarks/machine_or_server.py [--rounds 5] [--out DIR]

Starts two llama-servers of one build, the bundled SmolLM2, both pinned to the last core
(the client on the others): S (1 thread) and T (2 threads on that one core: the same
machine, a slower server). Then `--rounds` rounds, each of four short benches in turn
(`--concurrency 1 --requests-per-level 8`, the drift canary and the machine canary on):

    plain   S alone
    busy    S, with a loop busy 6 ms of every 20 on its core  (the machine slower)
    server  T                                                 (the server slower)
    again   S alone                                           (neither)

and judges each against the round's `plain` by their canaries at rest
(metrics/machine_verdict.py's `verdict_of(a, b)`: what `report A B` prints). Printed per
round: each verdict with its ratios, then how often each said what it should.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from inferlab.engines.llama_server import LlamaServer, ServerOptions
from inferlab.metrics.machine_verdict import verdict_of, verdict_words
from inferlab.summary import RunSummary
from inferlab.testing.cores import busy_loop, pin

EXPECTED = {"busy": "machine", "server": "server", "again": "neither"}
BUSY_MS, PERIOD_MS = 6.0, 20.0


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", type=Path, default=Path("results/machine-or-server"))
    return p.parse_args()


@contextlib.contextmanager
def servers(core: int) -> Iterator[tuple[str, str]]:
    """S (1 thread) and T (2 threads), both on `core`."""
    with (
        LlamaServer(ServerOptions(parallel=4, threads=1)) as s,
        LlamaServer(ServerOptions(parallel=4, threads=2)) as t,
    ):
        for x in (s, t):
            if x.proc is not None:
                pin(x.proc.pid, core)
        yield s.base_url, t.base_url


def bench(url: str, out: Path, client: set[int]) -> RunSummary:
    cmd = ["uv", "run", "inferlab", "bench", "--url", url, "--concurrency", "1"]
    cmd += ["--requests-per-level", "8", "--no-plots", "--no-report", "--out", str(out), "--json"]
    done = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=lambda: os.sched_setaffinity(0, client),
    )
    if done.returncode != 0:
        raise SystemExit(f"bench failed ({done.returncode}): {done.stderr[-2000:]}")
    return RunSummary.from_json(json.loads(done.stdout))


def one_round(k: int, urls: tuple[str, str], core: int, a: argparse.Namespace) -> dict[str, str]:
    s_url, t_url = urls
    client = set(os.sched_getaffinity(0))
    plain = bench(s_url, a.out / f"plain-{k}", client)
    with busy_loop(core, BUSY_MS, PERIOD_MS):
        time.sleep(1.0)  # the loop settled on its core
        busy = bench(s_url, a.out / f"busy-{k}", client)
    runs = {"busy": busy, "server": bench(t_url, a.out / f"server-{k}", client)}
    runs["again"] = bench(s_url, a.out / f"again-{k}", client)
    said = {}
    for name, run in runs.items():
        assert plain.canary is not None and run.canary is not None
        v = verdict_of(plain.canary, run.canary)
        said[name] = "none" if v is None else v.says
        words = "no machine canary" if v is None else verdict_words(v)
        print(f"#{k} {name:>6} (expected {EXPECTED[name]}): {words}", flush=True)
    return said


def main() -> None:
    a = parse()
    cores = sorted(os.sched_getaffinity(0))
    core, client = cores[-1], set(cores[:-1]) or {cores[-1]}
    os.sched_setaffinity(0, client)
    tally: dict[str, Counter[str]] = {n: Counter() for n in EXPECTED}
    with servers(core) as urls:
        for k in range(a.rounds):
            for name, says in one_round(k, urls, core, a).items():
                tally[name][says] += 1
    for name, c in tally.items():
        print(f"{name}: said {EXPECTED[name]} in {c[EXPECTED[name]]} of {a.rounds} ({dict(c)})")


if __name__ == "__main__":
    main()
