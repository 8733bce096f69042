"""The machine's speed across the demo's steps, read from bench's drift canary.

llama-bench measures the engine alone without HTTP, so it cannot take the canary itself:
the demo starts its server first and leaves it idle while llama-bench runs, and the canary
(bench/canary.py's request) goes to it REST_READINGS times just before and just after
(`measured_alone`, after one request not kept: the server's first). The profile takes the
canary around its probes, the sweep at rest and after every level. After the sweep the
canary's moves (metrics/speed_shift.py) are set beside the predictions (`at_measured_speed`:
where it moved beyond its noise since the profile, each level re-simulated with every
profiled cost x the ratio, stated as such and never graded) and beside the time split
(`engine_speed_lines`: the canary around each served level against the engine alone's).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from inferlab.metrics.speed_shift import engine_shift, profile_shift, split_line

if TYPE_CHECKING:
    from inferlab.bench.canary import Taken
    from inferlab.demo.config import DemoConfig
    from inferlab.engines.result import EngineBench
    from inferlab.load.workload import Workload
    from inferlab.sim.predict import Predictor
    from inferlab.summary import Canary, LevelSummary, RunSummary, SpeedShift


@dataclass(frozen=True, slots=True)
class EngineAlone:
    """The engine measured alone (None: not measured) and the canary TPOTs (ms) taken on
    the idle server just before and just after it (empty: none came back)."""

    bench: EngineBench | None
    canary_ms: tuple[float, ...] = ()


async def _take(base_url: str, count: int) -> list[Taken]:
    """`count` canaries one after another, after one not kept."""
    import aiohttp

    from inferlab.bench.canary import CanaryLog, canary_endpoint, take
    from inferlab.bench.client import Endpoint, make_connector
    from inferlab.bench.server import pick_model, probe_server

    async with aiohttp.ClientSession(connector=make_connector(4, keepalive=False)) as session:
        info = await probe_server(session, base_url, {})
        ep = Endpoint(info.base_url, pick_model(info, None), server_kind=info.kind)
        log = CanaryLog(canary_endpoint(ep))
        t0 = time.perf_counter_ns()
        for _ in range(count + 1):
            await take(log, session, t0, -1)
    return log.taken[1:]


def canary_readings(base_url: str, count: int) -> tuple[list[float], str | None]:
    """The TPOTs (ms) of `count` canaries that came back, and the first error (None: none)."""
    from inferlab.errors import InferlabError

    try:
        taken = asyncio.run(_take(base_url, count))
    except InferlabError as e:  # the server did not answer /v1/models
        return [], str(e)
    ms = [t.tpot_ms for t in taken if t.tpot_ms is not None]
    return ms, next((t.error for t in taken if t.error), None)


def measured_alone(
    cfg: DemoConfig, gguf: Path, threads: int, out: Path, base_url: str
) -> tuple[EngineAlone, dict[str, str]]:
    """The engine alone (demo/steps.py), with the canary on the idle server around it."""
    from inferlab.bench.canary import REST_READINGS
    from inferlab.demo.steps import engine_alone

    if not cfg.engine_bench:  # skipped: engine_alone says so
        eb, facts = engine_alone(cfg, gguf, threads, out)
        return EngineAlone(eb), facts
    before, why = canary_readings(base_url, REST_READINGS)
    eb, facts = engine_alone(cfg, gguf, threads, out)
    if eb is None:
        return EngineAlone(None), facts
    after, why_after = canary_readings(base_url, REST_READINGS)
    shown = " ".join(f"{x:.1f}" for x in before) or "-"
    shown_after = " ".join(f"{x:.1f}" for x in after) or "-"
    failed = why or why_after
    print(
        f"    engine alone: the drift canary on the idle server just before and after it: "
        f"TPOT {shown} ms, then {shown_after} ms"
        + (f" ({failed})" if failed else "; set against the sweep's after it"),
        flush=True,
    )
    return EngineAlone(eb, tuple(before + after)), facts


def at_measured_speed(
    summary: RunSummary, pr: Predictor, canary: Canary | None, workload: Workload | None
) -> RunSummary:
    """The summary with the canary's move since the profile (`speed_shifts`) and, where it
    moved beyond its noise, each predicted level re-simulated at the measurement's speed."""
    shift = profile_shift(canary, summary.canary)
    if shift is None:
        return summary
    levels = summary.levels
    if shift.beyond_noise and workload is not None:
        levels = tuple(_rescaled(lv, pr, shift.ratio, workload) for lv in levels)
    shifts = (*(summary.speed_shifts or ()), shift)
    return dataclasses.replace(summary, levels=levels, speed_shifts=shifts)


def _rescaled(lv: LevelSummary, pr: Predictor, ratio: float, workload: Workload) -> LevelSummary:
    """One level's prediction with its re-simulation at `ratio` x every profiled cost."""
    from inferlab.errors import InferlabError
    from inferlab.metrics.scoring import errors
    from inferlab.sim.predict import predict
    from inferlab.sim.steptime.profile import ProfileStepTime
    from inferlab.summary import AtMeasuredSpeed

    level = next((x for x in workload.levels if x.label == lv.label), None)
    if lv.predicted is None or level is None or not isinstance(pr.model, ProfileStepTime):
        return lv
    try:
        reqs = workload.requests(level)
        p = predict(
            pr.model.scaled(ratio), pr.knobs, level, reqs, pr.slo, costs=pr.costs.scaled(ratio)
        )
    except InferlabError:
        return lv
    at = AtMeasuredSpeed(speed_ratio=ratio, ttft_s=p.ttft_s, tpot_s=p.tpot_s, errors=errors(p, lv))
    return dataclasses.replace(
        lv, predicted=dataclasses.replace(lv.predicted, at_measured_speed=at)
    )


def with_engine_shifts(summary: RunSummary, engine: EngineAlone) -> RunSummary:
    """The summary with the canary around each served level that has a time split, set
    against the canary around the engine alone (`speed_shifts`, against engine_alone)."""
    shifts = [
        s
        for lv in summary.levels
        if lv.engine is not None
        and (s := engine_shift(engine.canary_ms, summary.canary, lv.label)) is not None
    ]
    if not shifts:
        return summary
    return dataclasses.replace(summary, speed_shifts=(*(summary.speed_shifts or ()), *shifts))


def engine_speed_lines(summary: RunSummary) -> list[str]:
    """Beside the time split: each served level whose canary moved beyond its noise since
    the engine alone ran; none moved: the first level's, within it."""
    splits = {lv.label: lv.engine for lv in summary.levels if lv.engine is not None}
    shifts: list[SpeedShift] = [
        s for s in summary.speed_shifts or () if s.against == "engine_alone" and s.level in splits
    ]
    shown = [s for s in shifts if s.beyond_noise] or shifts[:1]
    out = []
    for s in shown:
        split = splits[s.level or ""]
        if split is not None:
            out.append(f"Machine speed: {split_line(s, split)}.")
    return out
