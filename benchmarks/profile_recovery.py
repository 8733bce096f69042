"""How closely `inferlab profile` recovers a server's step costs, on the real clock.

The fake llama-server of inferlab.testing.fake_steps schedules its decode steps with
costs the script states (base + per decoder + per context token + prefill terms, and a
per-request cost). `inferlab profile` probes it through HTTP as it would a real server;
this prints each fitted term beside the scripted one, and the prefill curve at the probed
shapes. The tests check the mechanism (tests/profile/test_fit.py recovers every term
exactly from observations they control); how close the real-clock fit comes depends on
the machine and its load, so it is printed here, not bounded in a test.

    uv run python benchmarks/profile_recovery.py [--runs 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from inferlab.profile.fit import fit_profile
from inferlab.profile.record import load_profile
from inferlab.testing.fake_steps import StepScript, running_fake_steps

SCRIPT = StepScript(per_prompt_token_s=100e-6, per_kilo_pair_s=0.3e-3, ctx_per_slot=640)
TERMS = ("base_s", "per_decode_s", "per_context_token_s", "per_ubatch_s")
SHAPES = ((16, 0), (128, 0), (384, 0), (256, 128), (128, 256))  # (prompt, cached)


def one_run(out: Path) -> None:
    with running_fake_steps(SCRIPT) as url:
        cmd = [sys.executable, "-m", "inferlab.cli", "profile", "--url", url, "--out", str(out)]
        subprocess.run([*cmd, "--threads", "1"], check=True, capture_output=True, timeout=600)
    fit = fit_profile(load_profile(out).observations)
    for term in TERMS:
        got, want = getattr(fit, term), getattr(SCRIPT, term)
        print(f"  {term:<22} scripted {want * 1e3:9.4f} ms  fitted {got * 1e3:9.4f} ms  "
              f"{(got - want) / want:+6.1%}")  # fmt: skip
    for k, h in zip(fit.decode_bends, fit.decode_bends_s, strict=True):
        print(f"  per decoder past {k:<5} scripted    0.0000 ms  fitted {h * 1e3:9.4f} ms")
    for n, k in SHAPES:
        want = SCRIPT.step_s([], [(n, k)])
        got = fit.step_s(0, 0, n, n * (k + n / 2))
        print(f"  prefill P={n:<4} K={k:<4}    scripted {want * 1e3:9.2f} ms  fitted "
              f"{got * 1e3:9.2f} ms  {(got - want) / want:+6.1%}")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=1)
    args = p.parse_args()
    for i in range(args.runs):
        print(f"run {i + 1}:")
        with tempfile.TemporaryDirectory() as d:
            one_run(Path(d) / "profile")


if __name__ == "__main__":
    main()
