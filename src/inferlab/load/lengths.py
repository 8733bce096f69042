"""Token-length distributions for prompts and outputs: parse the flag text once, sample vectorised.

Accepted forms (the `--prompt-tokens` / `--output-tokens` text):

    N                       every request has N tokens
    uniform:LO:HI           whole numbers LO..HI, both included
    normal:MEAN:SD          rounded to the nearest token
    lognormal:MEDIAN:SIGMA  MEDIAN * exp(SIGMA * Z), rounded (sigma of the log, as numpy's)
    empirical:FILE          drawn with replacement from a file of whole numbers
                            separated by spaces or newlines

The legacy forms of `simulate` still work: `LO:HI` is uniform, a bare path to an existing file is
empirical. Every draw is clipped to [1, max_tokens]; a distribution that could never produce a
length in that range (N, LO, MEAN or MEDIAN outside it) is an error, not a silent clip.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NoReturn

import numpy as np
import numpy.typing as npt

from inferlab.errors import ConfigError, literal

LengthKind = Literal["fixed", "uniform", "normal", "lognormal", "empirical"]

ACCEPTED = (
    "N, uniform:LO:HI, normal:MEAN:SD, lognormal:MEDIAN:SIGMA or empirical:FILE "
    "(LO:HI and a bare FILE path also work)"
)


class _Bad(ValueError):
    """A parse problem, turned into one InferlabError line by `LengthDist.parse`."""


@dataclass(frozen=True, slots=True)
class LengthDist:
    """One length distribution. `a`, `b` are N/-, LO/HI, MEAN/SD or MEDIAN/SIGMA by kind."""

    kind: LengthKind
    a: float
    b: float = 0.0
    max_tokens: int = 1_000_000
    values: tuple[int, ...] = field(default=(), repr=False)  # empirical only
    path: str = ""  # empirical only: the file the values came from

    @classmethod
    def fixed(cls, n: int, max_tokens: int = 1_000_000) -> LengthDist:
        """Every request exactly n tokens (n within [1, max_tokens])."""
        return cls.parse(str(n), "length", max_tokens)

    @classmethod
    def parse(cls, text: str, flag: str, max_tokens: int = 1_000_000) -> LengthDist:
        """Read the text; a malformed one raises ConfigError naming `flag` in one line (a
        config field in braces, e.g. "{prompt_tokens}", which the CLI words as its flag)."""
        if max_tokens < 1:
            raise ConfigError(f"{flag}: the length limit must be at least 1 (got {max_tokens})")
        try:
            dist = _parse(text.strip(), flag, max_tokens)
        except _Bad as e:
            said = literal(f"{text!r}: {e}")
            raise ConfigError(f"{flag} {said}; accepted: {literal(ACCEPTED)}") from None
        return dist

    def sample(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
        """n draws as int64, each within [1, max_tokens]."""
        if self.kind == "fixed":
            return np.full(n, int(self.a), dtype=np.int64)  # within [1, max] by construction
        if self.kind == "uniform":
            drawn = rng.integers(int(self.a), int(self.b) + 1, size=n, dtype=np.int64)
            return np.minimum(drawn, self.max_tokens)  # LO >= 1 by construction
        if self.kind == "normal":
            raw: npt.NDArray[np.float64] = rng.normal(self.a, self.b, size=n)
        elif self.kind == "lognormal":
            raw = rng.lognormal(math.log(self.a), self.b, size=n)
        else:
            pool = np.asarray(self.values, dtype=np.int64)
            return np.clip(pool[rng.integers(0, len(pool), size=n)], 1, self.max_tokens)
        return np.clip(np.rint(raw), 1, self.max_tokens).astype(np.int64)

    @property
    def mean_tokens(self) -> float:
        """The mean of the clipped distribution (exact but for rounding to whole tokens)."""
        lo, hi = 1.0, float(self.max_tokens)
        if self.kind == "fixed":
            return self.a
        if self.kind == "uniform":
            top = min(int(self.b), self.max_tokens)  # values above the limit count as the limit
            over = int(self.b) - top
            count = int(self.b) - int(self.a) + 1
            return ((self.a + top) / 2 * (top - self.a + 1) + over * top) / count
        if self.kind == "empirical":
            return float(np.clip(np.asarray(self.values), 1, self.max_tokens).mean())
        if self.b == 0:
            return min(max(round(self.a), lo), hi)
        if self.kind == "normal":
            return _clipped_normal_mean(self.a, self.b, lo, hi)
        return _clipped_lognormal_mean(math.log(self.a), self.b, lo, hi)

    @property
    def max_possible(self) -> int:
        """The longest length a draw can give (for checks against a server's context)."""
        if self.kind == "fixed":
            return int(self.a)
        if self.kind == "uniform":
            return min(int(self.b), self.max_tokens)
        if self.kind == "empirical":
            return min(max(self.values), self.max_tokens)
        return self.max_tokens if self.b > 0 else min(round(self.a), self.max_tokens)

    def describe(self) -> str:
        """One phrase, e.g. 'lognormal median 200 sigma 0.8, clipped to [1, 4096]'."""
        clip = f", clipped to [1, {self.max_tokens}]"
        if self.kind == "fixed":
            return f"fixed {self.a:g}"
        if self.kind == "uniform":
            tail = clip if self.b > self.max_tokens else ""
            return f"uniform {self.a:g} to {self.b:g}{tail}"
        if self.kind == "normal":
            return f"normal mean {self.a:g} sd {self.b:g}{clip}"
        if self.kind == "lognormal":
            return f"lognormal median {self.a:g} sigma {self.b:g}{clip}"
        tail = clip if max(self.values) > self.max_tokens else ""
        return (
            f"empirical {self.path} ({len(self.values):,} values, "
            f"{min(self.values)} to {max(self.values)}){tail}"
        )


def _parse(text: str, flag: str, max_tokens: int) -> LengthDist:
    head, sep, rest = text.partition(":")
    if sep and head in ("uniform", "normal", "lognormal"):
        parts = rest.split(":")
        if len(parts) != 2:
            raise _Bad(f"{head} takes two numbers after '{head}:'")
        if head == "uniform":
            return _uniform(parts[0], parts[1], max_tokens)
        kind: LengthKind = "normal" if head == "normal" else "lognormal"
        return _shaped(kind, parts[0], parts[1], max_tokens)
    if sep and head == "empirical":
        return _empirical(rest, flag, max_tokens)
    if _is_int(text):
        n = int(text)
        if not 1 <= n <= max_tokens:
            raise _Bad(f"N must be between 1 and {max_tokens}")
        return LengthDist("fixed", float(n), max_tokens=max_tokens)
    parts = text.split(":")
    if len(parts) == 2 and all(_is_int(p) for p in parts):
        return _uniform(parts[0], parts[1], max_tokens)
    if text and Path(text).is_file():
        return _empirical(text, flag, max_tokens)
    raise _Bad("not a length distribution")


def _is_int(text: str) -> bool:
    return re.fullmatch(r"\s*[+-]?[0-9]+\s*", text) is not None


def _uniform(lo_text: str, hi_text: str, max_tokens: int) -> LengthDist:
    if not (_is_int(lo_text) and _is_int(hi_text)):
        raise _Bad("uniform bounds must be whole numbers")
    lo, hi = int(lo_text), int(hi_text)
    if not 1 <= lo <= hi:
        raise _Bad("uniform needs 1 <= LO <= HI")
    if lo > max_tokens:
        raise _Bad(f"LO is above the limit of {max_tokens} tokens")
    return LengthDist("uniform", float(lo), float(hi), max_tokens)


def _shaped(kind: LengthKind, center_text: str, spread_text: str, max_tokens: int) -> LengthDist:
    try:
        center, spread = float(center_text), float(spread_text)
    except ValueError:
        raise _Bad(f"{kind} takes two numbers") from None
    name = "MEAN" if kind == "normal" else "MEDIAN"
    if not (math.isfinite(center) and 1 <= center <= max_tokens):
        raise _Bad(f"{kind} {name} must be between 1 and {max_tokens}")
    if not (math.isfinite(spread) and spread >= 0):
        raise _Bad(f"{kind} {'SD' if kind == 'normal' else 'SIGMA'} must be 0 or more")
    return LengthDist(kind, center, spread, max_tokens)


def _empirical(path_text: str, flag: str, max_tokens: int) -> LengthDist:
    if not path_text.strip():
        raise _Bad("empirical needs a FILE after 'empirical:'")
    path = Path(path_text)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise _Bad(f"cannot read {path_text}: {getattr(e, 'strerror', None) or e}") from None
    try:
        values = np.array(text.split(), dtype=np.int64)
    except (ValueError, OverflowError):
        _raise_bad_value(path_text, flag, text)
    if values.size == 0:
        raise _Bad(f"{path_text} holds no lengths")
    if values.min() < 1:
        _raise_bad_value(path_text, flag, text)
    if values.min() > max_tokens:
        raise _Bad(f"every length in {path_text} is above the limit of {max_tokens} tokens")
    return LengthDist("empirical", 0.0, 0.0, max_tokens, tuple(values.tolist()), path_text)


def _raise_bad_value(path_text: str, flag: str, text: str) -> NoReturn:
    """Find the first value that is not a whole number >= 1 and name its line (1-based)."""
    for line_no, line in enumerate(text.splitlines(), 1):
        for token in line.split():
            if not (_is_int(token) and int(token) >= 1):
                raise ConfigError(
                    f"{flag} {literal(path_text)}:{line_no}: {literal(repr(token))} is not a "
                    "whole number of tokens "
                    ">= 1; an empirical file holds whole numbers separated by spaces or newlines"
                )
    raise _Bad(f"cannot read the numbers in {path_text}")


def _phi(x: float) -> float:
    """Standard normal CDF."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def _clipped_normal_mean(mu: float, sd: float, lo: float, hi: float) -> float:
    """E[clip(X, lo, hi)] for X ~ N(mu, sd)."""
    a, b = (lo - mu) / sd, (hi - mu) / sd
    pdf_a, pdf_b = math.exp(-a * a / 2), math.exp(-b * b / 2)
    inside = mu * (_phi(b) - _phi(a)) + sd * (pdf_a - pdf_b) / math.sqrt(2 * math.pi)
    return lo * _phi(a) + hi * (1 - _phi(b)) + inside


def _clipped_lognormal_mean(mu: float, sigma: float, lo: float, hi: float) -> float:
    """E[clip(X, lo, hi)] for log X ~ N(mu, sigma)."""
    a, b = (math.log(lo) - mu) / sigma, (math.log(hi) - mu) / sigma
    inside = math.exp(mu + sigma * sigma / 2) * (_phi(b - sigma) - _phi(a - sigma))
    return lo * _phi(a) + hi * (1 - _phi(b)) + inside
