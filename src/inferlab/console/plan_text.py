"""What `inferlab plan` prints: each simulated rate, the chain of reasoning (--explain), the
fleet and its price, and what the step time stands on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from inferlab.units import fmt_duration

if TYPE_CHECKING:
    from inferlab.sim.capacity_plan import Fleet, Plan, RatePoint
    from inferlab.sim.simulate_level import SimConfig
    from inferlab.sim.steptime.choice import StepChoice

FLOOR_NOTE = (
    "at the floor: an upper bound on what one replica sustains, so a lower bound on replicas"
)
CALIBRATE_HINT = (
    "to plan on a real server: bench it (`inferlab bench --url ... --out RUN`) and pass "
    "--calibrate RUN, or state --efficiency (real servers run at 0.25-0.5 of the floor)"
)


def rate_line(r: RatePoint) -> str:
    v = r.violation()
    return (
        f"  {r.rate_per_s:9.3g} req/s: TTFT p99 {fmt_duration(r.ttft_p99_s)}, "
        f"TPOT p99 {fmt_duration(r.tpot_p99_s)}, preemptions {r.preemptions}, "
        f"{r.verdict} -> {'meets the SLO' if v is None else 'fails: ' + v}"
    )


def steps(cfg: SimConfig, fit_lines: list[str], lines: list[str]) -> None:
    """--explain: the step time and scheduler in words, then each simulated rate."""
    print("step time:")
    for k, v in cfg.description.items():
        print(f"  {k.removesuffix('_s').replace('_', ' ')}: {fmt_value(k, v)}")
    for line in fit_lines:
        print(f"  {line}")
    p = cfg.policy
    chunk = "whole prompts" if p.chunk_tokens is None else f"{p.chunk_tokens} tokens"
    kv = "unbounded" if p.kv_capacity_tokens is None else f"{p.kv_capacity_tokens:,} tokens"
    print(f"policy: {p.name}, max batch {p.max_batch}, prefill chunk {chunk}, KV capacity {kv}")
    arrival = cfg.workload.arrival if cfg.workload else "poisson"
    print(f"each rate below is one simulation of a {arrival} load:")
    print("\n".join(lines))


def fmt_value(key: str, v: object) -> str:
    """A step-time setting as a person reads it: times with their unit, lists joined."""
    if isinstance(v, float) and key.endswith("_s"):
        return fmt_duration(v)
    if isinstance(v, list):
        return ", ".join(f"{x:g}" if isinstance(x, float) else str(x) for x in v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def devices(step: StepChoice) -> str:
    """What a replica runs on: GPUs, or (a profile) a server as it was profiled, whose
    hardware the profile does not know (a CPU llama-server is no GPU)."""
    return "servers as profiled" if step.basis == "profiled" else "GPUs"


def explain(plan: Plan, target_rate: float, fleet: Fleet, step: StepChoice) -> None:
    print(
        f"highest rate within the SLO: {plan.max_rate_per_s:.3g} req/s per replica; "
        f"above it the binding constraint is {plan.binding}"
    )
    print(
        f"replicas = ceil({target_rate:g} / {plan.max_rate_per_s:.3g}) = {plan.replicas}; "
        f"{devices(step)} = {plan.replicas} x TP {fleet.tp} = {plan.gpus}"
    )


def answer(plan: Plan, target_rate: float, fleet: Fleet, step: StepChoice) -> None:
    print(
        f"one replica (TP {fleet.tp}) sustains {plan.max_rate_per_s:.3g} req/s within the SLO "
        f"(binding: {plan.binding})"
    )
    print(f"for {target_rate:g} req/s: {plan.replicas} replicas = {plan.gpus} {devices(step)}")
    if plan.max_load.status == "levels_exhausted":
        above = min(p.rate_per_s for p in plan.points if p.rate_per_s > plan.max_rate_per_s)
        print(
            f"search: rates between {plan.max_rate_per_s:.3g} and {above:.3g} req/s were not "
            f"simulated within --search-max-levels {len(plan.points)}: raise it to narrow "
            "the answer (fewer replicas, perhaps)"
        )
    if step.basis == "floor":
        print(f"basis: {FLOOR_NOTE}; {CALIBRATE_HINT}")
    elif step.basis == "efficiency":
        print(f"basis: the floor slowed to --efficiency {step.efficiency:g} (stated, not measured)")
    elif step.basis == "profiled":
        print(
            f"basis: the served engine's step and request costs profiled in {step.profile_path} "
            "(`inferlab profile`)"
        )
    else:
        print(f"basis: step times fitted to the measured run {step.calibrate}")
    if plan.usd_per_million_output_tokens is not None:
        print(
            f"price: ${plan.usd_per_million_output_tokens:.3g} per million output tokens at "
            f"${fleet.usd_per_gpu_hour:g} per server-hour (--gpu-hour)"
            if step.basis == "profiled"
            else f"${fleet.usd_per_gpu_hour:g}/GPU-hour"
        )
