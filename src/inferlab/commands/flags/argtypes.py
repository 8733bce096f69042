"""argparse types that read a number, a unit quantity or a list, and refuse anything
else in one line naming the flag (every verb's flags, and the shared flag groups beside
them in commands/flags/)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from inferlab import units
from inferlab.errors import InferlabError

# Far above any real byte count, rate or FLOPS (1e30), yet far below float overflow, so
# products and ratios of stated quantities stay finite.
MAX_QUANTITY = 1e30
# Below any real byte count, time or rate, yet far above underflow: 1/x stays finite.
MIN_QUANTITY = 1e-12
# Far above any real token count, batch or request count, yet small enough that no
# product with it overflows and every loop over it is refused before it starts.
MAX_WHOLE = 10**12


def unit_arg(parse: Callable[[str], float], positive: bool = False) -> Callable[[str], float]:
    """Wrap a unit parser so argparse names the flag in its error (positive: refuse 0 too)."""

    def _parse(text: str) -> float:
        try:
            value = parse(text)
        except InferlabError as e:
            from inferlab.commands.flags.names import said  # only on a bad value: not at start

            raise argparse.ArgumentTypeError(said(e)) from e
        if math.isnan(value) or value < 0:
            raise argparse.ArgumentTypeError(f"{text!r} must not be negative")
        if positive and value == 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be above zero")
        if 0 < value < MIN_QUANTITY:
            raise argparse.ArgumentTypeError(f"{text!r} is too small (0, or {MIN_QUANTITY:g} up)")
        if not math.isfinite(value) or value > MAX_QUANTITY:
            raise argparse.ArgumentTypeError(f"{text!r} is too large (at most {MAX_QUANTITY:g})")
        return value

    _parse.__name__ = parse.__name__.replace("parse_", "")
    return _parse


BYTES = unit_arg(units.parse_byte_size)  # a bare number (other than 0) is refused
BANDWIDTH = unit_arg(units.parse_bandwidth, positive=True)
FLOPS = unit_arg(units.parse_flops, positive=True)
TIME = unit_arg(units.parse_duration)  # a bare number (other than 0) is refused
COUNT = unit_arg(units.parse_count)
RATE = unit_arg(units.parse_rate)


def _number_list(text: str, cast: Callable[[str], float], example: str) -> list[Any]:
    try:
        values = [cast(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: write numbers like {example}") from e
    if not values or any(not v > 0 for v in values):  # `not v > 0` also catches NaN
        raise argparse.ArgumentTypeError(f"{text!r}: give positive numbers, e.g. {example}")
    if any(not math.isfinite(v) or v > MAX_WHOLE for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: numbers up to {MAX_WHOLE:g}, e.g. {example}")
    return values


def int_list(text: str) -> list[int]:
    """'1,2,4,8' -> [1, 2, 4, 8] (concurrency levels)."""
    return _number_list(text, int, "1,2,4,8")


def whole(minimum: int = 0, maximum: int = MAX_WHOLE) -> Callable[[str], int]:
    """An argparse type: a whole number in [minimum, maximum], named in the error."""

    def _parse(text: str) -> int:
        try:
            value = int(text.strip().replace("_", ""))
        except ValueError:
            try:  # "1e3" and "4096.0" are whole numbers too
                f = float(text)
            except ValueError:
                f = math.nan
            if not (math.isfinite(f) and f.is_integer()):
                raise argparse.ArgumentTypeError(
                    f"{text!r} is not a whole number (write it like 4096)"
                ) from None
            value = int(f)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {minimum}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"{text!r} is too large (at most {maximum:g})")
        return value

    _parse.__name__ = "whole number"
    return _parse


def real(
    minimum: float = 0.0, maximum: float = MAX_QUANTITY, above: bool = False
) -> Callable[[str], float]:
    """An argparse type: a finite number >= minimum (> minimum when `above`), <= maximum."""

    def _parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a number (write it like 0.5 or 3)"
            ) from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} must be a finite number")
        if value < minimum or (above and value == minimum):
            rel = "above" if above else "at least"
            raise argparse.ArgumentTypeError(f"{text!r} must be {rel} {minimum:g}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"{text!r} is too large (at most {maximum:g})")
        return value

    _parse.__name__ = "number"
    return _parse


POSITIVE_INT = whole(1)
NONNEG_INT = whole(0)
POSITIVE = real(0.0, above=True)
NONNEG = real(0.0)
FRACTION = real(0.0, 1.0)


def share_arg(text: str) -> float:
    """--fail-if-slower: '5%' or 0.05, as a fraction at least 0 (report's and bench's)."""
    try:
        v = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a share, e.g. 5% or 0.05") from None
    if not v >= 0.0 or (v > 1.0 and not text.endswith("%")):  # is "5" 5 % or 500 %? say which
        raise argparse.ArgumentTypeError(f"{text!r}: give a share from 0, e.g. 5% or 0.05")
    return v
