"""The demo's default SLO (its flags, --slo and --min-attainment, are flags.py's), applied
to the predicted and the measured levels alike (goodput): `ttft=2s,tpot=150ms` unless
--slo gives another; 150 ms per token is about 7 tokens/s, a person's reading speed, and
2 s the usual bound for a chat's first token.

The predictions themselves are sim/predict.py's (`make_predictor`, `predict_levels`), the
Poisson level demo/levels.py's (`poisson_level`), their scoring metrics/scoring.py's
(`attach`); their lines are console/predict_text.py's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inferlab.slo.grammar import Slo

DEMO_SLO = "ttft=2s,tpot=150ms"


def demo_slo(text: str | None, min_attainment: float) -> Slo:
    from inferlab.slo.grammar import parse_slo

    return parse_slo(text or DEMO_SLO, min_attainment)
