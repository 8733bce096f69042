"""`inferlab profile` against a fake llama-server whose step costs are scripted (slow: a
subprocess): the probes run end to end (identity, every probe kind, cache_n, the fit
printed equals the fit of what was saved, the residual table, strict JSON).

The fake's steps run on the real clock, so how closely the fit recovers each scripted
term depends on the machine's load (per decoder came out 3.48 ms for a scripted 4 ms with
a busy loop on one of two cores): that precision is printed by
benchmarks/profile_recovery.py, not bounded here. test_fit.py recovers every term exactly
from observations the test controls. A TTFT only gains from load (loopback HTTP, the
client), so the fitted request cost is checked to hold at least the scripted one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferlab.jsonio import loads_strict
from inferlab.profile.fit import fit_profile
from inferlab.profile.record import load_profile
from inferlab.testing.fake_steps import StepScript, running_fake_steps
from tests.clirun import RunCli
from tests.fakeslots import slot_tasks

pytestmark = pytest.mark.slow

SCRIPT = StepScript(per_prompt_token_s=100e-6, per_kilo_pair_s=0.3e-3, ctx_per_slot=640)


def test_profile_recovers_the_scripted_step_costs(tmp_path: Path, run_cli: RunCli) -> None:
    with running_fake_steps(SCRIPT) as url:
        code, out, err = run_cli(
            "profile", "--url", url, "--out", str(tmp_path), "--threads", "1", "--json"
        )
        tasks = slot_tasks(url)
    assert code == 0, err
    # the profile's last 4 requests settled the slots, highest id first (bench/settle.py):
    # the next load fills them 3, 2, 1, 0, as on an idle server
    last = max(tasks)
    assert tasks == [last, last - 1, last - 2, last - 3]
    assert "settled  4 slots" in err
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
        "split",
    }
    # every probe names its slots, so each step's ubatches are known (specs/llamacpp_ubatches.py):
    # decoders in slots 0..D-1 are one, a prompt beside them a second, slots 0, 2 two
    by_probe = {(o.probe, o.ubatch_count) for o in profile.observations}
    assert by_probe == {
        ("lone", 1),
        ("prefix", 1),
        ("decode", 1),
        ("context", 1),
        ("mixed", 2),
        ("split", 2),
    }
    # and the decoders in each: split streams one a ubatch, the others all in one
    groups = {o.probe: o.decode_groups for o in profile.observations if o.decoders}
    assert groups == {"decode": (4,), "context": (4,), "mixed": (3,), "split": (1, 1)}
    assert profile.chat_first_tokens is None  # the fake has no chat API: nothing measured
    assert "template no chat API" in err
    prefix = [o for o in profile.observations if o.probe == "prefix"]
    assert [o.cached_tokens for o in prefix] == [128, 256]  # cache_n, as the fake reported it
    # the fake times each prefill as llama-server does (timings.prompt_ms): the TTFT
    # probes carry it, so the request's cost is measured beyond the server's step
    ttft = [o for o in profile.observations if o.probe in ("lone", "prefix")]
    assert all(o.server_step_s and 0 < o.server_step_s < o.median_s for o in ttft)
    fit = fit_profile(profile.observations)
    assert {"lone-step", "prefix-step"} <= {r.probe for r in fit.residuals}
    assert printed["fit"]["base_s"] == fit.base_s
    for p in (16, 384):  # a request pays at least what the fake scripts (HTTP only adds)
        scripted = SCRIPT.request_overhead_s + SCRIPT.request_per_prompt_token_s * p
        assert fit.request_cost_s(p) > scripted * 0.9
    assert "worst residual" in err and "mixed" in err
    # the decode probe ran in 4 rounds spread over the profile: their spread is printed
    decode = [o for o in profile.observations if o.probe == "decode"]
    assert all(o.run_medians_s is not None and len(o.run_medians_s) == 4 for o in decode)
    assert fit.speed_spread is not None and "the machine's speed over the profile" in err
    # bench's drift canary around the probes (bench/canary.py's request, in slot 0): 3 at
    # rest, one between the probe groups, 3 after them, each named by what it preceded
    c = profile.canary
    assert c is not None and c.slot == 0 and c.output_tokens == 16
    assert [r.before for r in c.readings] == [
        *("lone",) * 3,
        *("context", "mixed", "prefix"),
        *(None,) * 3,
    ]
    assert [r.at_rest for r in c.readings] == [True] * 3 + [False] * 6
    assert all(r.tpot_ms and r.tpot_ms > 0 for r in c.readings)
    assert c.rest_tpot_ms is not None and "canary   TPOT" in err and "over the profile" in err


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
