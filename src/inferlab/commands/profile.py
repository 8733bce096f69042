"""`inferlab profile`: fixed probes against a running server -> DIR/profile.json and its fit.

The probes (profile/probe_plan.py, docs/profile.md) are the same whatever workload is later
predicted. profile.json is written once, at the end: a server that dies mid-profile
leaves one error line and no file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from inferlab.commands.flags.argtypes import whole
from inferlab.metrics.runfolder import result_folder


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("profile", help="profile a served engine's step once (for predictions)")
    p.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--out", type=Path, help="results folder (results/profile-<time>)")
    p.add_argument(
        "--budget",
        type=whole(1, 3),
        default=1,
        help="1: <= 3 min for the bundled model on 2 cores; 2, 3: more repeats, every "
        "batch up to the slots, more prompt lengths, longer contexts (1)",
    )
    p.add_argument("--threads", type=whole(1, 4096), help="the server's threads (recorded)")
    p.add_argument("--served-model", help="the served model to profile (the first one if omitted)")
    p.add_argument("--model", dest="served_model", help=argparse.SUPPRESS)  # the old name
    p.add_argument("--overwrite", action="store_true", help="replace DIR/profile.json")
    p.add_argument("--json", action="store_true", help="print the profile and fit as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import os

    from inferlab.address import api_base, checked_root
    from inferlab.jsonio import dumps, write_json
    from inferlab.profile.fit import fit_profile
    from inferlab.profile.record import PROFILE_NAME
    from inferlab.profile.run_profile import ProfileConfig, run_profile
    from inferlab.profile.text import fit_lines, identity_line

    checked_root(args.url)
    out = result_folder(args.out, "profile", PROFILE_NAME, args.overwrite)
    say = sys.stderr if args.json else sys.stdout
    cfg = ProfileConfig(
        url=api_base(args.url),
        budget=args.budget,
        threads=args.threads,
        model=args.served_model,
        api_key=os.environ.get("OPENAI_API_KEY"),
        progress=lambda line: print(line, file=say, flush=True),
    )
    profile = run_profile(cfg)
    fit = fit_profile(profile.observations)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / PROFILE_NAME, profile)
    print(identity_line(profile), file=say)
    print("\n".join(fit_lines(fit)), file=say)
    print(f"saved: {out / PROFILE_NAME}", file=say)
    if args.json:
        print(dumps({"profile": profile, "fit": fit}))
    return 0
