"""The demo's SLO flags: --slo and --min-attainment, with the demo's default SLO, applied
to the predicted and the measured levels alike (goodput): `ttft=2s,tpot=150ms` unless
--slo gives another; 150 ms per token is about 7 tokens/s, a person's reading speed, and
2 s the usual bound for a chat's first token.

The predictions themselves are sim/predict.py's (`make_predictor`, `poisson_level`,
`predict_levels`, `attach`); their lines are console/predict_text.py's.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from inferlab.console.predict_text import SLO_WHY

if TYPE_CHECKING:
    from inferlab.slo.grammar import Slo

DEMO_SLO = "ttft=2s,tpot=150ms"


def add_slo_flags(p: argparse.ArgumentParser) -> None:
    """--slo and --min-attainment, as bench reads them; the demo has a default SLO."""
    from inferlab.commands.common import real
    from inferlab.commands.slo_args import slo_text

    p.add_argument(
        "--slo",
        type=slo_text,
        help=f"objectives for goodput, predicted and measured ({DEMO_SLO}: {SLO_WHY})",
    )
    p.add_argument(
        "--min-attainment",
        type=real(0.0, 1.0, above=True),
        default=0.9,
        help="share of requests within the SLO for a level to pass (0.9)",
    )


def demo_slo(text: str | None, min_attainment: float) -> Slo:
    from inferlab.slo.grammar import parse_slo

    return parse_slo(text or DEMO_SLO, min_attainment)
