"""bench's --url given twice or more: the endpoints of a paired run (each `label=URL`, or a
bare URL named by its place), --block-requests and --fail-if-slower, and the flags a
paired run cannot take, each refused in one line before any run folder is made."""

from __future__ import annotations

import argparse
import re
import string
from typing import TYPE_CHECKING

from inferlab.commands.flags.argtypes import share_arg
from inferlab.errors import InferlabError

if TYPE_CHECKING:
    from inferlab.bench.blocks import PairedTarget
    from inferlab.load.workload import Workload

MAX_ENDPOINTS = 8
# A label: a word (letters, digits, _ . -) before "=". A bare URL never matches: its scheme
# or host:port puts a ":" before any "=".
_LABELLED = re.compile(r"^([A-Za-z_][\w.-]*)=(.*)$")
TWO_NAMES = ("base", "new")  # two bare URLs: the baseline and the change


def add_paired_args(p: argparse.ArgumentParser) -> None:
    """--block-requests and --fail-if-slower (a paired run's; --url is bench's own)."""
    g = p.add_argument_group("paired runs (--url A --url B: B against A, in alternating blocks)")
    g.add_argument(
        "--block-requests",
        type=_block_requests,
        metavar="N",
        help="requests per stream in one block: at concurrency c a block is N x c requests, "
        "and each endpoint runs --requests-per-level / (N x c) blocks per level (x --repeat), "
        "at least 4 and an even number, blocks made smaller where a level is too short (2)",
    )
    g.add_argument(
        "--fail-if-slower",
        type=share_arg,
        metavar="PCT",
        help="exit 1 when an endpoint is slower than the first beyond noise (its interval "
        "excludes 1) by more than PCT (e.g. 5%%) on any level's TPOT p50, TTFT p50 or tok/s",
    )


def _block_requests(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number, e.g. 2") from None
    if not 1 <= n <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1 to 1000 requests per stream")
    return n


def url_targets(urls: list[str]) -> tuple[PairedTarget, ...]:
    """Each --url as (label, URL): `label=URL`, or a bare URL named by its place (base,
    new for two; a, b, c, ... for more). One bare --url is a single-server run: ()."""
    if len(urls) == 1 and _LABELLED.match(urls[0]) is None and not urls[0].startswith("="):
        return ()
    if len(urls) > MAX_ENDPOINTS:
        raise InferlabError(f"--url: at most {MAX_ENDPOINTS} endpoints in one paired run")
    names = TWO_NAMES if len(urls) == 2 else tuple(string.ascii_lowercase[: len(urls)])
    targets = [_target(text, names[i]) for i, text in enumerate(urls)]
    seen: set[str] = set()
    for t in targets:
        if t.label in seen:
            raise InferlabError(
                f"--url: two endpoints labelled {t.label!r}; give each its own, e.g. "
                "--url base=http://127.0.0.1:8080/v1 --url new=http://127.0.0.1:8081/v1"
            )
        seen.add(t.label)
    if len(targets) == 1:
        raise InferlabError(
            f"--url {urls[0]}: a label names one endpoint of a paired run; give a second "
            "--url to compare against, or the bare URL"
        )
    return tuple(targets)


def _target(text: str, name: str) -> PairedTarget:
    from inferlab.bench.blocks import PairedTarget

    if text.startswith("="):
        raise InferlabError(f"--url {text}: no label before '='; write label=URL, e.g. new=...")
    m = _LABELLED.match(text)
    if m is None:
        return PairedTarget(name, text)
    label, url = m.group(1), m.group(2).strip()
    if not url:
        raise InferlabError(f"--url {text}: no URL after '{label}='; write {label}=URL")
    return PairedTarget(label, url)


def check_single(args: argparse.Namespace) -> None:
    """One server: the paired run's own flags are refused, each naming what it needs."""
    if args.fail_if_slower is not None:
        raise InferlabError(
            "--fail-if-slower gates a paired run: give two --url (A and B); to gate two "
            "separate runs, use `inferlab report A B --fail-if-slower 5%`"
        )
    if args.block_requests is not None:
        raise InferlabError("--block-requests sizes a paired run's blocks: give two --url")


def check_paired(args: argparse.Namespace, workload: Workload) -> None:
    """What a paired run cannot take: open-loop or trace levels, conversations, a
    search, load workers, /metrics (it reads none)."""
    refused = [
        (any(lv.kind != "concurrency" for lv in workload.levels), "--rate / --trace"),
        (workload.conversation is not None, "--turns"),
        (args.find_max_load is not None, "--find-max-load"),
        (args.workers != 1 or args.ray is not None, "--workers / --ray"),
        (args.metrics_url is not None, "--metrics-url"),
    ]
    for bad, flags in refused:
        if bad:
            raise InferlabError(
                f"{flags}: a paired run (several --url) sweeps concurrency levels in blocks "
                f"from this one process; leave out {flags}"
            )
