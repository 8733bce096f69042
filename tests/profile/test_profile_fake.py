"""`inferlab profile` against a fake llama-server whose step costs are scripted (slow: a
subprocess). The fake's steps run on the real clock, but a decoder's gap is the time
between two of the fake's step ends, which no request path adds to: so the step terms
are recovered within a stated tolerance (10 % base and per decoder, 30 % per context
token) and the prefill curve (P and P^2 terms together: noise trades one for the other
over the probed prompts; test_fit.py recovers each exactly) within 10 % at each probed
shape. A TTFT also holds loopback HTTP and the client, which the fake does not script
(1-6 ms here, with the machine's load): the fitted request cost is only checked to hold
at least the scripted one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.jsonio import loads_strict
from inferlab.profile.fit import fit_profile
from inferlab.profile.record import load_profile
from inferlab.testing.fake_steps import StepScript
from tests.clirun import RunCli
from tests.profile.fakes import running_fake_steps

pytestmark = pytest.mark.slow

SCRIPT = StepScript(per_prompt_token_s=100e-6, per_kilo_pair_s=0.3e-3, ctx_per_slot=640)
CLOSE = {"base_s": 0.10, "per_decode_s": 0.10, "per_context_token_s": 0.30}


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
    for n, k in ((16, 0), (128, 0), (384, 0), (256, 128), (128, 256)):  # prefill, prefix
        want = SCRIPT.step_s([], [(n, k)])
        assert fit.step_s(0, 0, n, n * (k + n / 2)) == pytest.approx(want, rel=0.1), (n, k)
    for p in (16, 384):  # a request pays at least what the fake scripts (HTTP only adds)
        scripted = SCRIPT.request_overhead_s + SCRIPT.request_per_prompt_token_s * p
        assert fit.request_cost_s(p) > scripted * 0.9
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
