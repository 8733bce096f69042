"""Step time fitted to engine-bench: monotone in batch, stated extrapolation, context, prefill."""

from __future__ import annotations

import dataclasses

import pytest

from inferlab.commands.flags.names import FLAG_NAMES
from inferlab.engines.result import BatchStep, EngineBench
from inferlab.errors import ConfigError, InferlabError
from inferlab.sim.steptime.base import DecodeBatch
from inferlab.sim.steptime.engine import EngineStepTime, fit_engine
from tests.engines.baseline import engine

# The llama-batched-bench on one thread: ms at batch 1 / 2 / 4 / 8 / 16.
MEASURED = {1: 0.0133, 2: 0.0245, 4: 0.0389, 8: 0.0635, 16: 0.1221}


def with_context(eb: EngineBench, pp: int, extra_s_per_ctx: float) -> EngineBench:
    """The same batches after a longer prompt: each step k x batch x extra context slower."""
    d_ctx = pp - eb.prompt_tokens
    longer = tuple(
        dataclasses.replace(
            s,
            prompt_tokens=pp,
            step_time_s=s.step_time_s + extra_s_per_ctx * s.batch * d_ctx,
            prefill_s=s.prefill_s * pp / s.prompt_tokens,
        )
        for s in eb.steps
    )
    return dataclasses.replace(eb, context_steps=longer)


def ctx_at(eb: EngineBench, batch: int) -> list[int]:
    """Contexts equal to batched-bench's mean while it decodes (prompt + output / 2)."""
    return [eb.prompt_tokens + eb.output_tokens // 2] * batch


def test_measured_batches_are_returned_and_between_them_the_line_joins_neighbours() -> None:
    eb = engine(MEASURED, 0.0133)
    m = EngineStepTime(fit_engine(eb))
    for b, s in MEASURED.items():
        assert m.step_time_s([], DecodeBatch.of(ctx_at(eb, b))) == pytest.approx(s)
    # batch 6: halfway between 4 and 8, not a line through all five points
    assert m.step_time_s([], DecodeBatch.of(ctx_at(eb, 6))) == pytest.approx((0.0389 + 0.0635) / 2)
    steps = [m.step_time_s([], DecodeBatch.of(ctx_at(eb, b))) for b in range(1, 33)]
    assert steps == sorted(steps)  # monotone, into the extrapolation too


def test_a_dip_is_raised_to_stay_monotone_and_said() -> None:
    dipped = dict(MEASURED) | {4: 0.0240}  # noise: batch 4 measured faster than batch 2
    fit = fit_engine(engine(dipped, 0.0133))
    assert fit.decode_step_s[2] == pytest.approx(0.0245) and fit.raised == (4,)
    assert any("raised" in line for line in EngineStepTime(fit).describe(16))


def test_beyond_the_largest_batch_is_extrapolated_stated_and_refused_past_twice() -> None:
    eb = engine(MEASURED, 0.0133)
    m = EngineStepTime(fit_engine(eb))
    slope = (0.1221 - 0.0635) / 8
    assert m.step_time_s([], DecodeBatch.of(ctx_at(eb, 24))) == pytest.approx(0.1221 + 8 * slope)
    lines = m.describe(32)
    assert any("17..32 are beyond the measured range" in line for line in lines)
    # past 2x it is refused: the simulator asks once per batch it reaches (sim/engine.py;
    # tests/sim/test_open_loop_batches.py), so the step time asked alone still answers
    with pytest.raises(ConfigError, match=r"batch 33 is beyond 2x .* \(16\).*add force") as e:
        m.check_batch(33)
    assert "a limit of 32 decoders" in str(e.value)
    assert "or add --force to extrapolate" in e.value.worded(FLAG_NAMES)  # as the CLI says it
    assert m.step_time_s([], DecodeBatch.of(ctx_at(eb, 33))) > 0.1221
    above_one = EngineStepTime(fit_engine(engine({2: 0.0245, 4: 0.0389}, 0.0133)))
    assert any("below 2: extrapolated along the first segment" in x for x in above_one.describe(4))
    assert above_one.step_time_s([], DecodeBatch.of([48])) == pytest.approx(0.0245 - 0.0072)
    forced = EngineStepTime(fit_engine(eb), force=True)
    assert forced.step_time_s([], DecodeBatch.of(ctx_at(eb, 64))) > 0.1221


def test_context_growth_comes_from_the_longer_prompts() -> None:
    k = 2e-6  # s per sequence per context token
    eb = with_context(engine(MEASURED, 0.0133), 128, k)
    fit = fit_engine(eb)
    assert fit.context_s_per_token == pytest.approx(k)
    assert fit.context_prompts == (32, 128)
    # 2 us x 16 streams x 96 tokens = 3.1 ms at batch 16, beyond its noise (1 % x 2 = 2.4 ms)
    assert not fit.context_within_noise
    small = fit_engine(with_context(engine(MEASURED, 0.0133), 128, 1e-7))
    assert small.context_within_noise
    assert any("smaller than the engine's noise" in x for x in EngineStepTime(small).describe(4))
    m = EngineStepTime(fit)
    base = m.step_time_s([], DecodeBatch.of(ctx_at(eb, 4)))
    longer = m.step_time_s([], DecodeBatch.of([c + 500 for c in ctx_at(eb, 4)]))
    assert longer - base == pytest.approx(4 * 500 * k)
    # one prompt length only: no growth, and said so
    flat = EngineStepTime(fit_engine(engine(MEASURED, 0.0133)))
    assert flat.fit.context_s_per_token == 0.0
    assert any("one prompt length only" in line for line in flat.describe(4))


def test_prefill_per_token_and_per_batch_and_ubatches() -> None:
    eb = engine(MEASURED, 0.0133)  # the helper's prefill: 0.17 s per 32-token prompt
    steps = tuple(dataclasses.replace(s, prefill_s=0.010 + 0.005 * s.batch * 32) for s in eb.steps)
    eb = dataclasses.replace(eb, steps=steps)
    eb = dataclasses.replace(eb, prefill=dataclasses.replace(eb.prefill, mean_s=0.010 + 0.16))
    fit = fit_engine(eb)
    assert fit.prefill_base_s == pytest.approx(0.010, rel=1e-6)
    assert fit.prefill_per_token_s == pytest.approx(0.005, rel=1e-6)
    m = EngineStepTime(fit, ubatch_tokens=512)
    assert m.step_time_s([(100, 0)], DecodeBatch.of([])) == pytest.approx(0.010 + 0.5)
    # 600 tokens: two ubatches, the per-batch cost twice
    assert m.step_time_s([(600, 0)], DecodeBatch.of([])) == pytest.approx(0.020 + 3.0)
    # a prompt beside 4 decodes: the decode step + its tokens (one call: no second per-batch)
    mixed = m.step_time_s([(32, 0)], DecodeBatch.of(ctx_at(eb, 4)))
    assert mixed == pytest.approx(0.0389 + 32 * 0.005)


def test_serving_overhead_is_added_per_step() -> None:
    eb = engine(MEASURED, 0.0133)
    m = EngineStepTime(fit_engine(eb), serving_overhead_s=0.002, overhead_source="stated")
    assert m.step_time_s([], DecodeBatch.of(ctx_at(eb, 2))) == pytest.approx(0.0265)
    assert any("2.00 ms per step (stated)" in line for line in m.describe(2))
    none = EngineStepTime(fit_engine(eb))
    assert any("serving overhead: 0, none given" in line for line in none.describe(2))


def test_no_steps_is_refused() -> None:
    eb = dataclasses.replace(engine(MEASURED, 0.0133), steps=())
    with pytest.raises(InferlabError, match="no batch steps"):
        fit_engine(eb)


def test_batch_step_rows_keep_their_prompt_length() -> None:
    eb = with_context(engine({1: 0.01, 2: 0.02}, 0.01), 128, 1e-6)
    back = EngineBench.from_json(eb.to_json())
    assert back.context_steps == eb.context_steps and back.context_prompts == (32, 128)
    old = eb.to_json()
    del old["context_steps"], old["context_prompts"]  # a result written before them
    assert EngineBench.from_json(old).context_steps == ()
    assert isinstance(back.context_steps[0], BatchStep)
