"""Token-length distributions for --prompt-tokens / --output-tokens (stand-in).

A stand-in with the interface helper `traces` is writing (LengthDist.parse, .sample,
.mean_tokens, .describe): on a merge conflict, take theirs. Forms: N, uniform:LO:HI,
normal:MEAN:SD, lognormal:MEDIAN:SIGMA, empirical:FILE, and the legacy LO:HI and a
bare file of whole numbers; every draw is clipped to [1, max_tokens].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from inferlab.errors import InferlabError

Kind = Literal["fixed", "uniform", "normal", "lognormal", "empirical"]
_KINDS: dict[str, Kind] = {"uniform": "uniform", "normal": "normal", "lognormal": "lognormal"}
FORMS = "N, uniform:LO:HI, normal:MEAN:SD, lognormal:MEDIAN:SIGMA or empirical:FILE"


@dataclass(frozen=True, slots=True)
class LengthDist:
    kind: Kind
    a: float
    b: float
    max_tokens: int
    values: tuple[int, ...] = ()
    source: str = ""

    @classmethod
    def parse(cls, text: str, flag: str, max_tokens: int) -> LengthDist:
        try:
            return cls._parse(text.strip(), max_tokens)
        except (ValueError, OSError) as e:
            raise InferlabError(f"{flag} {text!r}: {e}; write {FORMS}") from None

    @classmethod
    def _parse(cls, text: str, top: int) -> LengthDist:
        head, _, rest = text.partition(":")
        if head in ("uniform", "normal", "lognormal"):
            x, y = (float(v) for v in rest.split(":"))
            if not (math.isfinite(x) and math.isfinite(y)) or min(x, y) < 0:
                raise ValueError("numbers must be finite and >= 0")
            if head == "uniform" and not 1 <= x <= y:
                raise ValueError("uniform needs 1 <= LO <= HI")
            return cls(_KINDS[head], x, y, top, source=text)
        if head == "empirical" or (not rest and not text.isdigit() and Path(text).is_file()):
            path = Path(rest if head == "empirical" else text)
            vals = tuple(int(v) for v in path.read_text(encoding="utf-8").split())
            if not vals or min(vals) < 1:
                raise ValueError(f"{path}: empty, or a length below 1")
            return cls("empirical", 0, 0, top, vals, str(path))
        if rest:  # legacy LO:HI
            return cls._parse(f"uniform:{text}", top)
        n = int(text)
        if not 1 <= n <= top:
            raise ValueError(f"N must be 1 to {top}")
        return cls("fixed", n, n, top, source=text)

    def sample(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
        if self.kind == "fixed":
            x = np.full(n, self.a)
        elif self.kind == "uniform":
            x = rng.integers(int(self.a), int(self.b) + 1, n).astype(float)
        elif self.kind == "normal":
            x = np.rint(rng.normal(self.a, self.b, n))
        elif self.kind == "lognormal":
            x = np.rint(rng.lognormal(math.log(max(self.a, 1e-9)), self.b, n))
        else:
            x = rng.choice(np.asarray(self.values, dtype=float), n)
        out: npt.NDArray[np.int64] = np.clip(x, 1, self.max_tokens).astype(np.int64)
        return out

    @property
    def mean_tokens(self) -> float:
        if self.kind == "empirical":
            return float(np.mean(self.values))
        if self.kind == "uniform":
            return (self.a + self.b) / 2
        if self.kind == "lognormal":
            return self.a * math.exp(self.b**2 / 2)
        return self.a

    def describe(self) -> str:
        return self.source
