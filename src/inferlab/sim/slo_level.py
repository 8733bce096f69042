"""A simulated level against the SLO (`slo` block) and, open loop, its saturation verdict,
from the simulator's own queue length: the same blocks bench writes for a measured level."""

from __future__ import annotations

from dataclasses import replace

from inferlab.load.spec import Level
from inferlab.sim.engine import SimResult, Timeline
from inferlab.sim.output import TokenTimes, iter_records
from inferlab.slo.attainment import evaluate
from inferlab.slo.grammar import Slo
from inferlab.slo.outcome import outcomes
from inferlab.slo.saturation import Saturation, completed_rate_per_s, saturation
from inferlab.summary import LevelSummary


def simulated_saturation(result: SimResult, load: Level) -> Saturation | None:
    """Open loop only: arrivals vs completions, and the fitted growth of the queue."""
    if not load.open_loop or not result.requests:
        return None
    offered = completed_rate_per_s([r.arrival_s for r in result.requests]) or load.value
    ends = [r.finish_s for r in result.requests if r.finish_s is not None]
    tl = result.timeline
    last_arrival = max(r.arrival_s for r in result.requests)
    rows = zip(
        tl.column(Timeline.COLUMNS.index("t_s")),
        tl.column(Timeline.COLUMNS.index("queue_length")),
        strict=True,
    )
    # while requests arrive: the drain after the last arrival is no growth
    kept = [(t, q) for t, q in rows if t <= last_arrival]
    queue = ([t for t, _ in kept], [q for _, q in kept])
    return saturation(offered, ends, queue, "simulator_queue")


def judge_simulated(
    level: LevelSummary,
    result: SimResult,
    load: Level,
    slo: Slo | None,
    times: TokenTimes | None = None,
) -> LevelSummary:
    """The level with its `slo` block (with an SLO) and `saturation` block (open loop)."""
    judged = None
    if slo is not None:
        judged = evaluate(slo, outcomes(list(iter_records(result, load.label, times))))
    return replace(level, slo=judged, saturation=simulated_saturation(result, load))
