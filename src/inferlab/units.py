"""Parse and format physical quantities: bytes, bandwidth, FLOP/s, time, rates.

Bytes and rates are SI decimal (GB = 1e9 B); IEC units (KiB, GiB) are accepted
where users write them. Every printed number carries its unit.
"""

from __future__ import annotations

import re

from inferlab.errors import UnitError

# A sign is read so that "-1GB" is refused as negative (by the caller), not as unreadable.
_NUMBER = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"

_BYTE_PREFIX = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "ki": 2.0**10,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
}
_SI_PREFIX = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_TIME_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "min": 60.0,
    "h": 3600.0,
}
_COUNT_SUFFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}

_FORMS = {
    "bytes": "16GB, 16 GiB, 128KiB, 500MB or a plain number of bytes",
    "bandwidth": "3.35TB/s, 20GB/s, 900 GiB/s",
    "flops": "989TFLOPS, 989 TFLOP/s, 1.2PFLOPS, 500GFLOPS",
    "time": "14ms, 4us, 1.5s, 10min, 250ns",
    "count": "8B, 70e9, 135M, 4096, 1k",
    "rate": "5/s, 50/s, 0.5/s, 300/min",
}


def _fail(text: str, kind: str) -> UnitError:
    return UnitError(f"cannot read {text!r} as {kind}; write it like {_FORMS[kind]}")


def _split(text: str, kind: str) -> tuple[float, str]:
    m = re.fullmatch(rf"\s*{_NUMBER}\s*(\S*)\s*", text)
    if not m:
        raise _fail(text, kind)
    return float(m.group(1)), m.group(2)


def _prefixed(text: str | float, kind: str, pattern: str, prefixes: dict[str, float]) -> float:
    """A number, then a unit whose first group is a prefix looked up in `prefixes`."""
    if isinstance(text, int | float):
        return float(text)
    value, unit = _split(text, kind)
    if unit == "" and kind == "bytes":
        return value  # a plain number of bytes
    m = re.fullmatch(pattern, unit)
    if not m:
        raise _fail(text, kind)
    return value * prefixes[m.group(1) or ""]


def parse_bytes(text: str | float) -> float:
    """'16GB' -> 16e9, '128KiB' -> 131072, '16 GiB' -> 17179869184."""
    return _prefixed(text, "bytes", r"([kKMGTP]i?)?B", _BYTE_PREFIX)


def parse_bandwidth(text: str | float) -> float:
    """'3.35TB/s' -> 3.35e12 bytes per second."""
    return _prefixed(text, "bandwidth", r"([kKMGTP]i?)?B/s", _BYTE_PREFIX)


def parse_flops(text: str | float) -> float:
    """'989TFLOPS' -> 9.89e14 FLOP per second."""
    pattern = r"([kKMGTPE]?)(?:FLOPS|FLOP/s|flops|flop/s|OPS|TOPS)"
    return _prefixed(text, "flops", pattern, _SI_PREFIX)


def parse_time(text: str | float) -> float:
    """'14ms' -> 0.014 seconds. A bare number is seconds."""
    if isinstance(text, int | float):
        return float(text)
    value, unit = _split(text, "time")
    if unit == "":
        return value
    if unit not in _TIME_UNITS:
        raise _fail(text, "time")
    return value * _TIME_UNITS[unit]


def parse_duration(text: str) -> float:
    """A time a user typed: '14ms' -> 0.014. A bare number other than 0 is refused, since
    '50' could be ms or s and reading the wrong one gives a silent wrong answer."""
    value, unit = _split(text, "time")
    if unit == "" and value != 0:
        raise UnitError(
            f"{text.strip()!r} has no unit; write it like {_FORMS['time']} "
            f"(units: {', '.join(u for u in _TIME_UNITS if u.isascii())})"
        )
    return parse_time(text)


def parse_byte_size(text: str) -> float:
    """A size a user typed: '16GB' -> 16e9. A bare number other than 0 is refused: '16'
    meant as GB would be read as 16 bytes, a floor a billion times too low."""
    value, unit = _split(text, "bytes")
    if unit == "" and value != 0:
        raise UnitError(f"{text.strip()!r} has no unit; write it like 16GB, 16GiB, 128KiB or 500MB")
    return parse_bytes(text)


def parse_count(text: str | float) -> float:
    """'8B' -> 8e9 (parameters), '135M' -> 1.35e8, '4096' -> 4096."""
    if isinstance(text, int | float):
        return float(text)
    value, unit = _split(text, "count")
    if unit not in _COUNT_SUFFIX:
        raise _fail(text, "count")
    return value * _COUNT_SUFFIX[unit]


def parse_rate(text: str | float) -> float:
    """'5/s' -> 5.0 per second, '300/min' -> 5.0 per second, '5' -> 5.0."""
    if isinstance(text, int | float):
        return float(text)
    m = re.fullmatch(rf"\s*{_NUMBER}\s*(?:/\s*(s|sec|min|h))?\s*", text)
    if not m:
        raise _fail(text, "rate")
    per = {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}[m.group(2) or "s"]
    return float(m.group(1)) / per


def _scaled(value: float, unit: str, prefixes: list[tuple[float, str]], digits: int) -> str:
    for scale, prefix in prefixes:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    scale, prefix = prefixes[-1]
    return f"{value / scale:.{digits}g} {prefix}{unit}"


_SI_STEPS = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def fmt_bytes(n: float, digits: int = 4) -> str:
    return _scaled(n, "B", _SI_STEPS, digits)


def fmt_bytes_iec(n: float) -> str:
    """SI first, IEC beside it when that reads better: '131.1 kB (128 KiB)'."""
    for scale, unit in ((2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB")):
        if n >= scale:
            return f"{fmt_bytes(n)} ({n / scale:.4g} {unit})"
    return fmt_bytes(n)


def fmt_bandwidth(n: float, digits: int = 4) -> str:
    return _scaled(n, "B/s", _SI_STEPS, digits)


def fmt_flops(n: float, digits: int = 4) -> str:
    return _scaled(n, "FLOP/s", _SI_STEPS, digits)


def fmt_time(seconds: float, digits: int = 4) -> str:
    if seconds == 0:
        return "0 s"
    # 10 min and over in min: "22.6 min" reads, "1356 s" needs arithmetic
    steps = [(600.0, "min"), (1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]
    for scale, unit in steps:
        if abs(seconds) >= scale:
            return f"{seconds / (60.0 if unit == 'min' else scale):.{digits}g} {unit}"
    return f"{seconds / 1e-9:.{digits}g} ns"


def fmt_duration(seconds: float | None, digits: int = 4) -> str:
    """A latency or a span as people read it: ms below 10 s, s from 10 s, min from 10 min.

    '52 ms', '1234 ms', '12.5 s', '22.6 min' (never '135547.2 ms'); '-' for none.
    """
    if seconds is None or seconds != seconds:  # none, or NaN
        return "-"
    if abs(seconds) >= 600.0:
        return f"{_sig(seconds / 60.0, digits)} min"
    if abs(seconds) >= 10.0:
        return f"{_sig(seconds, digits)} s"
    if abs(seconds) >= 1e-3 or seconds == 0:
        return f"{_sig(seconds * 1e3, digits)} ms"
    return fmt_time(seconds, digits)


def _sig(x: float, digits: int) -> str:
    """`digits` significant digits, but whole numbers past them rather than '1.48e+03'."""
    return f"{x:.0f}" if abs(x) >= 10**digits else f"{x:.{digits}g}"


def fmt_count(n: float, digits: int = 4) -> str:
    return _scaled(
        n, "", [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"), (1.0, "")], digits
    ).strip()


def fmt_pct(fraction: float, digits: int = 3) -> str:
    return f"{fraction * 100:.{digits}g} %"
