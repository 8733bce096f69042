"""`inferlab profile` against a fake llama-server whose step costs are scripted (slow: a
subprocess). The fake's steps run on the real clock, so its coefficients are recovered
within a stated tolerance: 10 % for base and per decoder; 30 % for context; 50 % for per
prompt token and per token pair, which split one prefill curve in two (P and P^2 move
together over the probed prompts, so noise trades one for the other): that curve itself
within 10 %.
The fixed per-request cost is the scripted one plus what loopback HTTP and the client
really add (1-3 ms here): within 5 ms of the script."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.jsonio import loads_strict
from inferlab.profile.fit import fit_profile
from inferlab.profile.record import load_profile
from inferlab.testing.fake_steps import StepScript, running_fake_steps
from tests.clirun import RunCli

pytestmark = pytest.mark.slow

SCRIPT = StepScript(per_prompt_token_s=100e-6, per_kilo_pair_s=0.3e-3, ctx_per_slot=640)
CLOSE = {"base_s": 0.10, "per_decode_s": 0.10,
         "per_context_token_s": 0.30, "per_prompt_token_s": 0.50, "per_kilo_pair_s": 0.50,
         "request_per_prompt_token_s": 0.50}  # fmt: skip


def test_profile_recovers_the_scripted_step_costs(tmp_path: Path, run_cli: RunCli) -> None:
    with running_fake_steps(SCRIPT) as url:
        code, out, err = run_cli(
            "profile", "--url", url, "--out", str(tmp_path), "--threads", "1", "--json"
        )
    assert code == 0, err
    printed = loads_strict(out)
    profile = load_profile(tmp_path)
    assert profile.server.parallel == 4 and profile.server.threads == 1
    assert profile.server.ctx_per_slot == 640
    assert {o.probe for o in profile.observations} == {
        "lone",
        "prefix",
        "decode",
        "context",
        "mixed",
    }
    prefix = [o for o in profile.observations if o.probe == "prefix"]
    assert [o.cached_tokens for o in prefix] == [128, 256]  # cache_n, as the fake reported it
    fit = fit_profile(profile.observations)
    assert printed["fit"]["base_s"] == fit.base_s
    for term, rel in CLOSE.items():
        assert getattr(fit, term) == pytest.approx(getattr(SCRIPT, term), rel=rel), term
    assert fit.request_overhead_s == pytest.approx(SCRIPT.request_overhead_s, abs=0.005)
    for p in (128, 384):  # the prefill curve (no decoders, nothing cached)
        assert fit.step_s(0, 0, p, p * p / 2) == pytest.approx(SCRIPT.step_s([], [(p, 0)]), rel=0.1)
    assert "worst residual" in err and "mixed" in err


def test_a_server_that_dies_mid_profile_leaves_one_line_and_no_file(
    tmp_path: Path, run_cli: RunCli
) -> None:
    with running_fake_steps(StepScript(die_after=12, ctx_per_slot=640)) as url:
        code, out, err = run_cli("profile", "--url", url, "--out", str(tmp_path / "p"))
    assert code == 2
    lines = [s for s in err.splitlines() if "error:" in s]
    assert len(lines) == 1 and "is it still running?" in lines[0], err
    assert "Traceback" not in err
    assert not (tmp_path / "p" / "profile.json").exists()
    assert not list(tmp_path.rglob("*.tmp"))
