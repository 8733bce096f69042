"""Predicted against measured: every level of a run, predicted from the engine alone.

    uv run python benchmarks/predict_accuracy.py DEMO_DIR
    uv run python benchmarks/predict_accuracy.py ENGINE_DIR RUN_DIR [--parallel 4]
        [--serving-overhead 2ms | --overhead-from c=1] [--ctx-size N] [--force]

A demo folder (`inferlab demo --out DIR`) holds engine_bench.json and, per level, the
`predicted` block the demo stored BEFORE it measured the level (the closed-loop sweep,
the Poisson level at 70 % of the predicted capacity, the trace replay): those are read
as they were made. With `--repredict`, or for a bench run beside an engine-bench
folder, the closed-loop and Poisson levels are predicted again here, on the request
specs load/ draws for the run's lengths and seed (what bench sent).

The prediction (sim/predict.py) is the simulator with llama-server's scheduler
(--policy llama.cpp) and the step time fitted to the engine alone. Nothing is fitted
to the run unless --overhead-from names levels: then the serving overhead per step is
measured at those levels, and only the others are held out.

Printed per level: TPOT p50 and TTFT p50 predicted / measured / error, tok/s, and
goodput under the run's SLO. Targets: TPOT p50 within 10 %, TTFT p50 within 15 %,
goodput within 10 %. Where a level misses, the line names the mechanism the model
lacks (read from the sign and the level's shape); no constant is tuned to the check.

The engine folder and the run must be the same model and threads (refused otherwise,
as by simulate, unless --force). On a machine shared with other work the engine's and
the server's timings are both noisy: read the errors with the baseline's
`cpu_fraction` and the run's own warnings beside them.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from inferlab.argtypes import TIME
from inferlab.engines.llama_bench import load_engine_bench
from inferlab.errors import InferlabError
from inferlab.rundir import load_summary
from inferlab.sim.baseline import check_same_server
from inferlab.sim.policies.llamacpp import LlamaCppKnobs
from inferlab.sim.predict import measure_overhead, predict, run_levels, with_prediction
from inferlab.sim.stepmodel import StepChoice
from inferlab.sim.steptime_engine import EngineStepTime, fit_engine
from inferlab.slo.grammar import parse_slo
from inferlab.summary import LevelSummary, RunSummary

TPOT_TARGET, TTFT_TARGET, GOODPUT_TARGET = 0.10, 0.15, 0.10


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dirs", type=Path, nargs="+", help="DEMO_DIR, or ENGINE_DIR RUN_DIR")
    p.add_argument("--parallel", type=int, help="the server's slots (the demo's: its top c)")
    p.add_argument("--ctx-size", type=int, help="the server's context (parallel x 1024)")
    p.add_argument("--serving-overhead", type=TIME, help="a stated overhead per step")
    p.add_argument("--overhead-from", help="levels to measure the overhead at, e.g. c=1")
    p.add_argument("--repredict", action="store_true", help="ignore the stored predictions")
    p.add_argument("--force", action="store_true")
    return p.parse_args()


def repredict(a: argparse.Namespace, engine_dir: Path, run: RunSummary) -> RunSummary:
    """The run's closed-loop and Poisson levels predicted here from the engine folder."""
    eb = load_engine_bench(engine_dir)
    check_same_server(eb, StepChoice(force=a.force), run)
    top = max((int(lv.concurrency or 0) for lv in run.levels), default=4)
    knobs = LlamaCppKnobs(a.parallel or top or 4, ctx_size=a.ctx_size)
    model = EngineStepTime(fit_engine(eb), a.serving_overhead or 0.0, force=a.force)
    fitted: list[str] = []
    if a.overhead_from:
        fitted = a.overhead_from.split(",")
        over, how = measure_overhead(model, knobs, run, fitted)
        model = EngineStepTime(model.fit, over, force=a.force, overhead_source=how)
    print(f"engine: {eb.gguf}, {eb.threads} thread(s), CPU {eb.cpu_fraction:.0%} of its threads")
    print("\n".join("  " + line for line in model.describe(knobs.parallel)))
    judged = next((lv.slo for lv in run.levels if lv.slo is not None), None)
    slo = parse_slo(judged.slo, judged.min_attainment) if judged else None
    done = {}
    for lv, level, reqs in run_levels(run):
        pred = predict(model, knobs, level, reqs, slo, held_out=lv.label not in fitted)
        done[lv.label] = with_prediction(lv, pred)
    return dataclasses.replace(run, levels=tuple(done.values()))


def err(x: float | None) -> str:
    return "     -" if x is None else f"{x:+6.1%}"


def mechanism(lv: LevelSummary) -> str:
    """What the model lacks, named from the sign of the miss and the level's shape."""
    p = lv.predicted
    assert p is not None and p.errors is not None
    e, why = p.errors, []
    if e.tpot_p50 is not None and e.tpot_p50 < -TPOT_TARGET:
        srv = lv.server.step_time_s if lv.server else None
        seen = f" (the server's own step, its /metrics: {srv * 1e3:.1f} ms)" if srv else ""
        why.append(
            f"TPOT low: the served step{seen} carries a cost per step the engine alone does "
            "not (HTTP streaming, sampling, the slot loop, other work on the cores; 0 unless "
            "calibrated)"
        )
    elif e.tpot_p50 is not None and e.tpot_p50 > TPOT_TARGET:
        why.append("TPOT high: the engine was measured slower than the server ran (contention)")
    if e.ttft_p50 is not None and e.ttft_p50 < -TTFT_TARGET:
        why.append(
            "TTFT low: a prompt that reaches the server during a step waits for it, and "
            "queued prompts wait for every step's serving cost"
            if lv.rate_per_s is not None
            else "TTFT low: the server's prompt step runs slower than the engine's prefill "
            "(beside decodes, + HTTP), and a prompt arriving ms after the round's others "
            "waits a whole prefill step (the model prefills a round together)"
        )
    elif e.ttft_p50 is not None and e.ttft_p50 > TTFT_TARGET:
        why.append("TTFT high: the server prefilled faster than the engine-bench fit")
    good, tps = e.goodput_requests_per_s, e.tokens_per_s
    if good is not None and abs(good) > GOODPUT_TARGET:
        if tps is not None and abs(good - tps) < 0.02:
            why.append("goodput: every request within the SLO on both sides: the tok/s error")
        else:
            why.append("goodput: latencies near the SLO's limits put requests across them")
    return "; ".join(why)


def table(run: RunSummary) -> int:
    print(f"{'':>11} {'':>5} {'TPOT p50 ms':^22}  {'TTFT p50 s':^22}  {'tok/s':^20}  goodput")
    cols = f"{'pred':>7} {'meas':>7} {'err':>6}"
    print(f"{'level':>11} {'role':>5} {cols}  {cols}  {cols[2:]}  {cols[2:]}")
    misses = 0
    for lv in run.levels:
        p = lv.predicted
        if p is None or p.errors is None:
            continue
        e = p.errors
        good = lv.slo.goodput_requests_per_s if lv.slo else None
        print(
            f"{lv.label:>11} {'held' if p.held_out else 'fit':>5} "
            f"{(p.tpot_s.p50 or 0) * 1e3:7.1f} {(lv.tpot_s.p50 or 0) * 1e3:7.1f} {err(e.tpot_p50)}"
            f"  {p.ttft_s.p50 or 0:7.3f} {lv.ttft_s.p50 or 0:7.3f} {err(e.ttft_p50)}"
            f"  {p.tokens_per_s:6.1f} {lv.output_tokens_per_s_total:6.1f} {err(e.tokens_per_s)}"
            f"  {p.goodput_requests_per_s or 0:6.2f} {good or 0:6.2f} "
            f"{err(e.goodput_requests_per_s)}"
        )
        why = mechanism(lv) if p.held_out else ""
        if why:
            misses += 1
            print(f"{'':>17} miss: {why}")
    print(
        f"targets: TPOT p50 within {TPOT_TARGET:.0%}, TTFT p50 within {TTFT_TARGET:.0%}, goodput "
        f"within {GOODPUT_TARGET:.0%}; held-out levels missing a target: {misses}"
    )
    return 0


def main() -> int:
    a = parse()
    if len(a.dirs) > 2:
        raise InferlabError("give DEMO_DIR, or ENGINE_DIR RUN_DIR")
    run_dir = a.dirs[-1]
    run = load_summary(run_dir)
    stored = any(lv.predicted is not None for lv in run.levels)
    if len(a.dirs) == 2 or a.repredict or not stored:
        run = repredict(a, a.dirs[0], run)
    else:
        first = next(lv.predicted for lv in run.levels if lv.predicted is not None)
        print(f"predicted by the demo before measuring, from {first.source}")
        if run.levels and run.levels[0].slo is not None:
            print(f"SLO: {run.levels[0].slo.slo}")
    return table(run)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except InferlabError as e:
        print(f"predict_accuracy: {e}", file=sys.stderr)
        sys.exit(2)
