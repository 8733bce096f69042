"""Predicted against measured: every level of a bench run, predicted from an engine-bench folder.

    uv run python benchmarks/predict_accuracy.py ENGINE_DIR RUN_DIR [--parallel 4]
        [--serving-overhead 2ms | --overhead-from c=1] [--ctx-size N] [--force]

The prediction (sim/predict.py) is the simulator with llama-server's scheduler
(--policy llama.cpp) and the step time fitted to the engine alone. Nothing is fitted
to the run unless --overhead-from names levels: then the serving overhead per step
is measured at those levels, and only the others are held out. Printed: TTFT p50,
TPOT p50 and tok/s, predicted and measured, and the error of each. Targets: TPOT p50
within 10 %, TTFT p50 within 15 %.

The engine folder and the run must be the same model and threads (refused otherwise,
as by simulate, unless --force). On a machine shared with other work the engine's
and the server's timings are both noisy: read the errors with the baseline's
`cpu_fraction` and the run's own warnings beside them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from inferlab.commands.common import TIME
from inferlab.commands.engine_model import check_same_server, load_baseline
from inferlab.commands.report import load_summary
from inferlab.errors import InferlabError
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.sim.predict import measure_overhead, predict, run_levels
from inferlab.sim.steptime_engine import EngineStepTime, fit_engine

TPOT_TARGET, TTFT_TARGET = 0.10, 0.15


def err(pred: float | None, meas: float | None) -> str:
    if not pred or not meas:
        return "     -"
    return f"{(pred - meas) / meas:+6.1%}"


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("engine", type=Path, help="an engine-bench folder")
    p.add_argument("run", type=Path, help="a bench run folder (closed-loop and Poisson levels)")
    p.add_argument("--parallel", type=int, default=4, help="the server's slots (4)")
    p.add_argument("--ctx-size", type=int, help="the server's context (parallel x 1024)")
    p.add_argument("--serving-overhead", type=TIME, help="a stated overhead per step")
    p.add_argument("--overhead-from", help="levels to measure the overhead at, e.g. c=1")
    p.add_argument("--force", action="store_true")
    return p.parse_args()


def main() -> int:
    a = parse()
    eb = load_baseline(a.engine)
    run = load_summary(a.run)
    ns = argparse.Namespace(model=None, threads=None, force=a.force)
    check_same_server(eb, ns, run)
    knobs = LlamaCppKnobs(a.parallel, ctx_size=a.ctx_size)
    model = EngineStepTime(fit_engine(eb), a.serving_overhead or 0.0, force=a.force)
    fitted: list[str] = []
    if a.overhead_from:
        fitted = a.overhead_from.split(",")
        over, how = measure_overhead(model, knobs, run, fitted)
        model = EngineStepTime(model.fit, over, force=a.force, overhead_source=how)
    print(f"engine: {eb.gguf}, {eb.threads} thread(s), CPU {eb.cpu_fraction:.0%} of its threads")
    print("\n".join("  " + line for line in model.describe(a.parallel)))
    cols = f"{'pred':>7} {'meas':>7} {'err':>6}"
    print(f"{'':>17} {'TTFT p50 s':^22}  {'TPOT p50 ms':^22}  {'tok/s':^20}")
    print(f"{'level':>11} {'role':>5} {cols}  {cols}  {cols[2:]}")
    worst = 0.0
    for lv, level in run_levels(run):
        p = predict(model, knobs, level)
        mt, mp = lv.ttft_s.p50, lv.tpot_s.p50
        role = "fit" if lv.label in fitted else "held"
        pt, pp, tps = p.ttft_s.p50, p.tpot_s.p50, lv.output_tokens_per_s_total
        print(
            f"{lv.label:>11} {role:>5} {pt or 0:7.3f} {mt or 0:7.3f} {err(pt, mt)}"
            f"  {(pp or 0) * 1e3:7.1f} {(mp or 0) * 1e3:7.1f} {err(pp, mp)}"
            f"  {p.tokens_per_s:6.1f} {tps:6.1f} {err(p.tokens_per_s, tps)}"
        )
        if role == "held" and mp and p.tpot_s.p50:
            worst = max(worst, abs(p.tpot_s.p50 - mp) / mp)
    print(
        f"worst held-out TPOT p50 error {worst:.1%} "
        f"(targets: TPOT {TPOT_TARGET:.0%}, TTFT {TTFT_TARGET:.0%})"
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except InferlabError as e:
        print(f"predict_accuracy: {e}", file=sys.stderr)
        sys.exit(2)
