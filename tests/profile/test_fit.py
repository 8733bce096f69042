"""The fit recovers a scripted step model exactly from observations it generates."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from inferlab.profile.fit import TERMS, fit_profile
from inferlab.profile.record import Observation, Probe
from inferlab.sim.steptime.base import DecodeBatch
from inferlab.sim.steptime.profile import ProfileStepTime
from inferlab.testing.fake_steps import StepScript

SCRIPT = StepScript()


def _obs(
    probe: Probe,
    d: int,
    ctx_each: int,
    n: int,
    k: int,
    script: StepScript = SCRIPT,
    u: int = 1,
    groups: tuple[int, ...] | None = None,
) -> Observation:
    t = script.step_s([ctx_each] * d, [(n, k)] if n else [], u, groups)
    if probe in ("lone", "prefix"):
        t += script.request_overhead_s + script.request_per_prompt_token_s * (n + k)
    return Observation(probe, d, d * ctx_each, n, k, t, t, t, 3, ubatches=u, decode_groups=groups)


def scripted_observations(script: StepScript = SCRIPT) -> list[Observation]:
    out = [_obs("lone", 0, 0, p, 0, script) for p in (16, 128, 384)]
    out += [_obs("decode", d, 40, 0, 0, script) for d in (1, 2, 4)]
    out += [_obs("context", d, 400, 0, 0, script) for d in (1, 4)]
    out += [_obs("mixed", d, 60, p, 0, script, 2) for d in (1, 3) for p in (32, 128, 384)]
    out += [_obs("split", d, 40, 0, 0, script, d) for d in (2, 4)]
    out += [_obs("prefix", 0, 0, 384 - k, k, script) for k in (128, 256)]
    return out


def test_fit_recovers_the_scripted_coefficients() -> None:
    fit = fit_profile(scripted_observations())
    for term in TERMS:
        assert getattr(fit, term) == pytest.approx(getattr(SCRIPT, term), rel=1e-6), term
    assert fit.decode_bends == (2,)  # the decode probe's batches 1, 2, 4: a bend at 2
    assert fit.decode_bends_s[0] == pytest.approx(0.0, abs=1e-9)  # the script is a line
    assert fit.worst_error < 1e-9
    assert fit.zeroed == ()
    assert (fit.max_decoders, fit.max_prompt_tokens, fit.max_context_tokens) == (4, 384, 400)


def _server_timed(o: Observation, script: StepScript = SCRIPT) -> Observation:
    """A TTFT probe as llama-server reports it: its prefill step timed by the server."""
    if o.probe not in ("lone", "prefix"):
        return o
    n, k = o.prompt_tokens, o.cached_tokens
    return replace(o, server_step_s=script.step_s([], [(n, k)], 1))


def test_with_the_servers_prefill_time_the_request_cost_is_measured_not_fitted() -> None:
    # the step rows are the server's prefill times; the request's own cost is the line
    # through what each TTFT holds beyond them (scripted: 15 ms + 20 us a token)
    fit = fit_profile([_server_timed(o) for o in scripted_observations()])
    for term in TERMS:
        assert getattr(fit, term) == pytest.approx(getattr(SCRIPT, term), rel=1e-6), term
    assert fit.worst_error < 1e-9 and fit.zeroed == ()
    labels = [r.probe for r in fit.residuals]
    assert labels.count("lone-step") == 3 and labels.count("lone") == 3  # both shown


def test_a_ttft_the_fit_would_bend_cannot_move_the_request_cost() -> None:
    # lone prompts whose prefill runs 10 % over the step the mixed probe prices: fitted
    # from the TTFTs alone, part of that excess became a per-prompt-token request cost
    # that delays every prompt (on the real server, 0.26 ms a token); with the server's
    # own step it stays in the step, and the request cost is what the TTFT holds beyond
    # the server's step (here exactly 15 ms)
    def slow(o: Observation) -> Observation:
        if o.probe not in ("lone", "prefix"):
            return o
        step = SCRIPT.step_s([], [(o.prompt_tokens, o.cached_tokens)], 1) * 1.1
        t = step + 0.015
        return replace(o, median_s=t, p25_s=t, p75_s=t, server_step_s=step)

    flat = replace(SCRIPT, request_per_prompt_token_s=0.0)
    obs = [slow(o) for o in scripted_observations(flat)]
    fit = fit_profile(obs)
    assert fit.request_overhead_s == pytest.approx(0.015, rel=1e-6)
    assert fit.request_per_prompt_token_s == pytest.approx(0.0, abs=1e-12)
    unsplit = fit_profile([replace(o, server_step_s=None) for o in obs])
    assert unsplit.request_per_prompt_token_s > 1e-6  # from TTFTs alone: part of the excess


def test_a_term_noise_makes_negative_is_fixed_at_zero_and_named() -> None:
    # no growth with context at all, and the long-context steps measured 2 % faster: the
    # least-squares slope is negative; it is fixed at 0, named, and the rest still fit
    flat = StepScript(per_context_token_s=0.0)
    obs = [
        replace(o, median_s=o.median_s * 0.98) if o.probe == "context" else o
        for o in scripted_observations(flat)
    ]
    fit = fit_profile(obs)
    assert fit.zeroed == ("per_context_token_s",)
    assert fit.per_context_token_s == 0.0
    assert fit.decode_s(2) == pytest.approx(flat.per_decode_s * 2, rel=0.1)
    assert fit.worst_error < 0.03


def test_a_decode_cost_that_is_not_a_line_is_followed_through_the_probed_batches() -> None:
    # one CPU thread: D=2 costs twice D=1, D=8 much less than 8x (the bundled model's shape)
    curve = {1: 0.0167, 2: 0.0317, 8: 0.0758}
    obs = [o for o in scripted_observations(StepScript(per_decode_s=0.0)) if o.decoders == 0]
    obs += [
        Observation("decode", d, 40 * d, 0, 0, t, t, t, 3)
        for d, t in ((d, SCRIPT.base_s + SCRIPT.per_context_token_s * 40 * d + v)
                     for d, v in curve.items())
    ]  # fmt: skip
    fit = fit_profile(obs)
    assert fit.decode_bends == (2,)
    assert fit.worst_error < 1e-6

    def decode_step(d: int) -> float:
        return fit.step_s(d, 40 * d, 0, 0.0) - SCRIPT.per_context_token_s * 40 * d

    for d, v in curve.items():  # the base takes the line through D = 1, 2 back to D = 0
        assert decode_step(d) == pytest.approx(SCRIPT.base_s + v, rel=1e-4)
    mid = SCRIPT.base_s + (0.0317 + 0.0758) / 2
    assert decode_step(5) == pytest.approx(mid, rel=1e-4)  # halfway between 2 and 8
    past = SCRIPT.base_s + 0.0758 + 3 * (0.0758 - 0.0317) / 6
    assert decode_step(11) == pytest.approx(past, rel=1e-4)  # along the last segment
    assert fit.decode_bends_s[0] < 0  # the slope falls past D = 2: a negative bend kept


BENT = StepScript(per_decode_s=0.012, decode_knee=2, per_decode_past_knee_s=-0.006)


def test_decoders_cut_into_ubatches_are_priced_each_at_its_own_size() -> None:
    # one CPU thread: a ubatch of 4 decoders costs less than 4 of 1 (the slope falls past
    # 2 in each ubatch), so 4 decoders in slots 0, 2, 4, 6 cost 4 lone decodes
    obs = [o for o in scripted_observations(BENT) if o.probe not in ("decode", "split")]
    obs += [_obs("decode", d, 40, 0, 0, BENT) for d in (1, 2, 4, 8)]
    obs += [_obs("split", d, 40, 0, 0, BENT, d, (1,) * d) for d in (2, 4)]
    fit = fit_profile(obs)
    assert fit.worst_error < 1e-9
    assert fit.per_ubatch_s == pytest.approx(BENT.per_ubatch_s, rel=1e-6)
    assert fit.decode_bends == (2, 4)
    assert fit.decode_bends_s == pytest.approx((-0.006, 0.0), abs=1e-9)
    model = ProfileStepTime(fit)
    ctx = [40, 50, 60, 70]
    for groups in ((1, 3), (2, 2), (1, 1, 2)):  # the simulator's engine adds both parts
        got = model.step_time_s([], DecodeBatch.of(ctx)) + model.split_decode_s(groups)
        got += (len(groups) - 1) * model.extra_ubatch_s
        assert got == pytest.approx(BENT.step_s(ctx, [], len(groups), groups), rel=1e-6)


def test_the_step_model_prices_a_step_as_the_script_does() -> None:
    model = ProfileStepTime(fit_profile(scripted_observations()))
    decode = DecodeBatch.of([100, 200, 300])
    want = SCRIPT.step_s([100, 200, 300], [(64, 32), (10, 0)])
    assert model.step_time_s([(64, 32), (10, 0)], decode) == pytest.approx(want, rel=1e-6)
    assert model.request_overhead_s == pytest.approx(SCRIPT.request_overhead_s, rel=1e-6)


def test_batches_past_twice_the_profiled_are_refused_unless_forced() -> None:
    from inferlab.errors import InferlabError

    model = ProfileStepTime(fit_profile(scripted_observations()))
    model.check_batch(8)
    with pytest.raises(InferlabError, match="beyond 2x the largest batch the profile measured"):
        model.check_batch(9)
    ProfileStepTime(model.fit, force=True).check_batch(100)
    lines = model.describe(max_batch=6, max_prompt=1000, max_context=300)
    assert any("batches up to 6 sequences are beyond the profiled range (4)" in s for s in lines)
    assert any("prompts up to 1000 tokens are beyond the profiled range (384)" in s for s in lines)
    assert not any("contexts" in s for s in lines)


def test_too_few_observations_to_fit_is_one_line() -> None:
    from inferlab.errors import InferlabError

    with pytest.raises(InferlabError, match="at least 3 timed observations"):
        fit_profile(scripted_observations()[:2])


def test_the_speed_spread_is_how_far_the_decode_rounds_moved() -> None:
    obs = scripted_observations()
    assert fit_profile(obs).speed_spread is None  # no run medians: not measured
    assert fit_profile(obs).spread_line() is None
    rounds = {1: (0.010, 0.012, 0.011), 2: (0.020, 0.030), 4: (0.05,)}  # D=4 ran once
    obs = [replace(o, run_medians_s=rounds[o.decoders]) if o.probe == "decode" else o for o in obs]
    fit = fit_profile(obs)
    assert fit.speed_spread == pytest.approx(statistics.median([0.002 / 0.022, 0.010 / 0.050]))
    assert fit.spread_line() is not None and "+-15%" in fit.spread_line()


def test_a_scaled_fit_prices_every_step_and_request_that_much_more() -> None:
    fit = fit_profile(scripted_observations(StepScript()))
    slow = fit.scaled(1.2)
    for args in ((1, 100, 0, 0.0), (7, 3000, 64, 5000.0), (0, 0, 300, 45000.0)):
        assert slow.step_s(*args) == pytest.approx(1.2 * fit.step_s(*args), rel=1e-12)
    assert slow.request_cost_s(100) == pytest.approx(1.2 * fit.request_cost_s(100), rel=1e-12)
    assert slow.per_ubatch_s == pytest.approx(1.2 * fit.per_ubatch_s, rel=1e-12)
    assert (slow.residuals, slow.max_decoders) == (fit.residuals, fit.max_decoders)
