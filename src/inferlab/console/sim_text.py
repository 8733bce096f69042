"""What `inferlab simulate` prints: the level's latencies, its SLO and saturation verdicts,
the injected prompts' TTFT, and each probe of a max-load search."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

from inferlab.units import fmt_duration as dur

if TYPE_CHECKING:
    from inferlab.sim.request import RequestCosts
    from inferlab.sim.simulate_level import SimLevel
    from inferlab.summary import LevelSummary, SimulationBlock


def probe(level: LevelSummary, text: IO[str]) -> None:
    assert level.slo is not None
    sat = f", {level.saturation.verdict}" if level.saturation else ""
    verdict = "pass" if level.slo.passed else "fail"
    binding = level.slo.binding.describe(level.slo.min_attainment) if level.slo.binding else ""
    print(f"  {level.label}: {verdict} ({binding}){sat}", file=text)


def slo(lv: LevelSummary, file: IO[str]) -> None:
    """The level against --slo, and an open-loop level's saturation verdict."""
    from inferlab.slo.saturation import GROWING_NOTE, THRESHOLDS

    if lv.slo is not None:
        g = lv.slo
        why = "" if g.binding is None else f"; binding {g.binding.describe(g.min_attainment)}"
        print(
            f"  SLO {g.slo}: {'pass' if g.passed else 'fail'}; attainment {g.attainment:.0%} "
            f"(min {g.min_attainment:.0%}); goodput {g.goodput_requests_per_s:.3g} req/s, "
            f"{g.goodput_tokens_per_s:.4g} tok/s{why}",
            file=file,
        )
    if lv.saturation is not None:
        print(f"  load: {lv.saturation.describe()} ({THRESHOLDS})", file=file)
        if lv.saturation.verdict == "overloaded":
            print(f"  {GROWING_NOTE}", file=file)


def result(sl: SimLevel, sim: SimulationBlock | None, wall: float, file: IO[str]) -> None:
    lv, res = sl.summary, sl.result

    def say(line: str) -> None:
        print(line, file=file)

    say(
        f"{sim.policy if sim else '?'} scheduler, {sim.step_time_model if sim else '?'} step "
        "time; "
        f"{len(res.requests)} requests, {res.steps} steps, {res.sim_time_s:.2f} s simulated in "
        f"{wall:.2f} s"
    )
    say(f"  TTFT  p50 {dur(lv.ttft_s.p50)}  p99 {dur(lv.ttft_s.p99)}  max {dur(lv.ttft_s.max)}")
    say(f"  TPOT  p50 {dur(lv.tpot_s.p50)}  p99 {dur(lv.tpot_s.p99)}")
    say(f"  E2E   p50 {dur(lv.e2e_s.p50)}  max {dur(lv.e2e_s.max)}")
    say(
        f"  gaps  p50 {dur(lv.gap_s.p50)}  p99 {dur(lv.gap_s.p99)}  "
        f"max {dur(lv.gap_s.max)}  stalls {lv.stall_count}"
    )
    say(
        f"  throughput {lv.output_tokens_per_s_total:.1f} tok/s, "
        f"{lv.output_tokens_per_s_per_user:.1f} tok/s per user; "
        f"preemptions {res.preemptions}"
    )
    injected(lv, res, file)


def prompts(lv: LevelSummary, costs: RequestCosts, file: IO[str]) -> None:
    """What the prompts were made of: a chat template's tokens (a conversation level, from
    the profile) and the prefix cache's predicted hit ratio."""
    if lv.per_turn is not None and (costs.chat_first_tokens or costs.chat_per_message_tokens):
        print(
            f"  chat template (the profile's): +{costs.chat_first_tokens} tokens on a "
            f"conversation's first message ({costs.chat_shared_tokens} alike in every "
            f"conversation), +{costs.chat_per_message_tokens} per earlier message",
            file=file,
        )
    if lv.prefix_cache_hit_ratio is not None:
        print(
            f"  prefix cache: predicted hit ratio {lv.prefix_cache_hit_ratio:.2f} "
            "(prompt tokens served from cache)",
            file=file,
        )


def injected(lv: LevelSummary, res: Any, file: IO[str]) -> None:
    injected = [r for r in res.requests if r.injected]
    for r in injected:
        times = res.token_times(r)
        if r.finish_s is not None and times:
            print(
                f"  injected {r.prompt_tokens}-token prompt at {r.arrival_s:g} s: "
                f"TTFT {dur(times[0] - r.arrival_s)}",
                file=file,
            )
    gap_p50 = lv.gap_s.p50 or 0.0
    if injected and gap_p50:
        worst = lv.gap_s.max or 0.0
        print(
            f"  longest gap any stream saw: {dur(worst)} = {worst / gap_p50:.1f} median steps "
            f"(stall of ~{(worst - gap_p50) / gap_p50:.0f} decode steps)",
            file=file,
        )
