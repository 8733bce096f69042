"""Simulator speed: the wall-clock seconds to simulate a one-hour Poisson load.

Target (issue 40): one hour at 20 requests/s (72,000 requests) in at most 2.5 s on one core,
arrivals, event loop, records and summary together (5.43 s on 2026-12-05 before the change;
the target before it was 8 s).
Llama 3 8B on an H100 (roofline step time), prompts 500 and outputs 200 tokens. Each row of
CASES is one scheduler setup (`--case`; continuous batching with chunked prefill of 512 by
default); a new policy is one more row. Phases timed separately: the arrivals as load/ draws
them, the event loop, gathering every token time and building the per-request records (what
`simulate --out` writes), and the level summary (numpy over the arrays).

Side by side with another commit (`--against REV`, e.g. the commit before a change): REV is
checked out in a temporary git worktree, and this same script measures both trees, each run
in a fresh subprocess importing that tree's src/ (the same process-level setup), alternating
rounds so that a busy spell on a shared machine hits both; each side's median and spread
(min-max) and the ratio of medians are printed.

`--all-cases` measures every row, alternating, and prints their times side by side: what
a scheduler, and its prefix cache, cost on the same run (`vllm-prefix`: `--policy vllm`).

    uv run python benchmarks/sim_speed.py [--rate 20] [--hours 1] [--case continuous]
    uv run python benchmarks/sim_speed.py --against 2a4d9ba --rounds 3
    uv run python benchmarks/sim_speed.py --all-cases --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from inferlab.load.lengths import LengthDist
from inferlab.load.spec import Level
from inferlab.load.workload import Prefix, Workload
from inferlab.sim.engine import simulate
from inferlab.sim.output import TokenTimes, summarize_result, to_records
from inferlab.sim.prefix_cache import prompt_runs
from inferlab.sim.request import RequestModel
from inferlab.sim.scheduler import Policy
from inferlab.sim.workload import arrivals_of
from inferlab.specs.cost import derive_cost
from inferlab.specs.hardware import get_hardware
from inferlab.specs.model import load_preset

try:  # the tree `--against REV` measures may predate sim/steptime/ (a package since 2026-12-05)
    from inferlab.sim.steptime.roofline import RooflineStepTime
except ImportError:
    from inferlab.sim.steptime import RooflineStepTime  # type: ignore[attr-defined,no-redef]

TARGET_S = 2.5
REPO = Path(__file__).resolve().parents[1]
PHASES = ("arrivals", "event loop", "records", "summary", "total")


@dataclass(frozen=True)
class Case:
    """One row: the scheduler, its KV cache, and whether prompts share a prefix (then they
    carry their identity and the policy's prefix cache is modelled)."""

    about: str
    policy: Callable[[int], Policy]  # KV tokens -> the policy
    prefix_groups: int = 0  # 0: prompts share nothing
    prefix_tokens: int = 0


def _continuous(kv_tokens: int) -> Policy:
    return Policy("continuous", chunk_tokens=512, kv_capacity_tokens=kv_tokens)


def _vllm(kv_tokens: int) -> Policy:
    """vLLM's V1 scheduler (--policy vllm) at vLLM 0.32's H100 defaults: 8192 tokens a step,
    1024 requests (engine/arg_utils.py 2934-2942), blocks of 16 tokens (config/cache.py 72).
    Imported here: a tree `--against` measures may have no vLLM policy."""
    from inferlab.sim.policies.vllm_knobs import VllmKnobs

    return VllmKnobs(8192, 1024, 16).policy(kv_tokens)


CASES = {
    "continuous": Case("continuous batching, chunked prefill 512", _continuous),
    "continuous-prefix": Case(
        "the same, 8 shared 256-token prefixes (prefix cache on)", _continuous, 8, 256
    ),
    "vllm-prefix": Case(
        "vLLM's V1 scheduler at its H100 defaults, 8 shared 256-token prefixes (its prefix "
        "cache on)",
        _vllm,
        8,
        256,
    ),
}


@dataclass(frozen=True)
class Run:
    """One measurement: what was simulated, and each phase's wall and CPU seconds."""

    requests: int
    steps: int
    tpot_p50_ms: float
    hit_ratio: float | None
    wall_s: dict[str, float]
    cpu_s: dict[str, float]


def run_once(case: Case, rate: float, hours: float) -> Run:
    """Seconds of each phase, wall and CPU, in this process, on the inferlab it imports."""
    cost = derive_cost(load_preset("llama-3-8b"))
    model = RooflineStepTime(cost, get_hardware("h100-sxm"))
    policy = case.policy(int(60e9 // cost.kv_bytes_per_token))
    prefix = Prefix(case.prefix_groups, case.prefix_tokens) if case.prefix_groups else None
    level = Level("rate", rate)
    w = Workload(
        LengthDist.parse("500", "--prompt-tokens", 10**6),
        LengthDist.parse("200", "--output-tokens", 10**6),
        (level,),
        duration_s=hours * 3600,
        prefix=prefix,
    )
    t, c = [time.perf_counter()], [time.process_time()]

    def lap() -> None:
        t.append(time.perf_counter())
        c.append(time.process_time())

    reqs = w.requests(level)
    arrivals = arrivals_of(reqs)
    requests = RequestModel(prompts=prompt_runs(reqs) if prefix else None)
    lap()
    res = simulate(arrivals, model, policy, requests=requests)
    lap()
    times = TokenTimes.of(res)
    to_records(res, "bench", times)
    lap()
    lv = summarize_result(res, Level("rate", rate, "bench"), times)
    lap()
    wall = [b - a for a, b in zip(t, t[1:], strict=False)] + [t[-1] - t[0]]
    cpu = [b - a for a, b in zip(c, c[1:], strict=False)] + [c[-1] - c[0]]
    return Run(
        len(arrivals),
        res.steps,
        (lv.tpot_s.p50 or 0) * 1e3,
        res.predicted_hit_ratio,
        dict(zip(PHASES, wall, strict=True)),
        dict(zip(PHASES, cpu, strict=True)),
    )


def run_tree(src: Path, a: argparse.Namespace, case: str | None = None) -> Run:
    """One measurement (of `case`, else a.case) in a fresh subprocess that imports inferlab
    from `src`."""
    args = ["--child", "--case", case or a.case, "--rate", str(a.rate), "--hours", str(a.hours)]
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    ).stdout
    return Run(**json.loads(out.splitlines()[-1]))


def spread(values: list[float]) -> str:
    """Median, and min-max, in seconds."""
    return f"{statistics.median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"


def table(sides: dict[str, list[Run]], clock: str) -> None:
    """Each phase's median (min-max) per side, and the ratio of the totals' medians."""
    names = list(sides)
    print(f"{clock.split('_')[0]} s, median (min-max) of {len(sides[names[0]])} runs each:")
    print(f"  {'phase':<12}" + "".join(f"{n:>22}" for n in names))
    for phase in PHASES:
        cells = [spread([getattr(r, clock)[phase] for r in sides[n]]) for n in names]
        print(f"  {phase:<12}" + "".join(f"{c:>22}" for c in cells))
    if len(names) == 2:
        a, b = ([getattr(r, clock)["total"] for r in sides[n]] for n in names)
        print(f"  ratio of total medians {names[0]} / {names[1]}: "
              f"{statistics.median(a) / statistics.median(b):.2f}")  # fmt: skip


def against(rev: str, a: argparse.Namespace) -> dict[str, list[Run]]:
    """This tree and `rev` (a temporary git worktree), alternating, `a.rounds` runs each."""
    here = "this tree"
    sides: dict[str, list[Run]] = {rev: [], here: []}
    with tempfile.TemporaryDirectory() as tmp:
        wt = Path(tmp) / "rev"
        git = ["git", "-C", str(REPO), "worktree"]
        subprocess.run([*git, "add", "--detach", str(wt), rev], check=True, capture_output=True)
        try:
            for i in range(a.rounds):
                order = [(rev, wt / "src"), (here, REPO / "src")]
                for name, src in order if i % 2 == 0 else order[::-1]:
                    sides[name].append(run_tree(src, a))
                    print(f"  round {i + 1}: {name} {sides[name][-1].wall_s['total']:.2f} s")
        finally:
            subprocess.run([*git, "remove", "--force", str(wt)], check=False)
    return sides


def all_cases(a: argparse.Namespace) -> None:
    """Every case on this tree, alternating, `a.rounds` runs each: one row per case."""
    runs: dict[str, list[Run]] = {name: [] for name in CASES}
    for i in range(a.rounds):
        for name in list(CASES)[:: 1 if i % 2 == 0 else -1]:
            runs[name].append(run_tree(REPO / "src", a, name))
    print(f"{a.rate:g}/s x {a.hours:g} h, Llama 3 8B on an H100; wall s, median (min-max) "
          f"of {a.rounds} runs each:")  # fmt: skip
    print(f"  {'case':<18}{'total':>22}{'event loop':>22}  steps, hit ratio")
    for name, rs in runs.items():
        last = rs[-1]
        hits = "-" if last.hit_ratio is None else f"{last.hit_ratio:.3f}"
        cells = [spread([r.wall_s[p] for r in rs]) for p in ("total", "event loop")]
        print(f"  {name:<18}{cells[0]:>22}{cells[1]:>22}  {last.steps}, {hits}")
    for name, case in CASES.items():
        print(f"  {name}: {case.about}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=20.0)
    p.add_argument("--hours", type=float, default=1.0)
    p.add_argument("--case", choices=sorted(CASES), default="continuous")
    p.add_argument("--against", metavar="REV", help="measure beside this commit (a worktree)")
    p.add_argument("--rounds", type=int, default=3, help="runs of each side, alternating (3)")
    p.add_argument("--all-cases", action="store_true", help="every case, side by side")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:  # one measurement, as JSON, for run_tree
        print(json.dumps(asdict(run_once(CASES[a.case], a.rate, a.hours))))
        return
    if a.all_cases:
        all_cases(a)
        return
    n = a.rate * 3600 * a.hours
    print(f"{a.rate:g}/s x {a.hours:g} h, Llama 3 8B on an H100, {CASES[a.case].about}:")
    sides = against(a.against, a) if a.against else {"this tree": []}
    if not a.against:
        for _ in range(a.rounds):
            sides["this tree"].append(run_tree(REPO / "src", a))
    last = sides["this tree"][-1]
    hits = f", prefix hit ratio {last.hit_ratio:.3f}" if last.hit_ratio is not None else ""
    print(
        f"  {last.requests} requests, {last.steps} engine steps, "
        f"TPOT p50 {last.tpot_p50_ms:.2f} ms{hits}"
    )
    table(sides, "wall_s")
    table(sides, "cpu_s")
    total = statistics.median(r.wall_s["total"] for r in sides["this tree"])
    verdict = "met" if total <= TARGET_S else "NOT met"
    if n != 72_000 or a.case != "continuous":
        verdict += " (the target is for --case continuous --rate 20 --hours 1)"
    print(f"target: 72000 requests in <= {TARGET_S:g} s (median wall): {n:.0f} -> {verdict}")


if __name__ == "__main__":
    main()
