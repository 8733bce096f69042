"""Figures as a card states them aloud: three significant digits, a unit, no exponents."""

from __future__ import annotations

import math

from inferlab.drill.draw import Setup, round_sig
from inferlab.units import fmt_bandwidth, fmt_bytes, fmt_time


def say(x: float, sig: int = 3) -> str:
    """5291.3 -> '5,290'; 0.18519 -> '0.185'; 4.0 -> '4'."""
    if not math.isfinite(x):
        return "∞"
    v = round_sig(x, sig)
    if abs(v) >= 10 ** (sig - 1):
        return f"{v:,.0f}"
    decimals = sig - 1 - math.floor(math.log10(abs(v))) if v else 0
    return f"{v:.{max(decimals, 0)}f}".rstrip("0").rstrip(".")


def quantity(value: float, unit: str) -> str:
    """The answer as a person writes it: '4.78 ms', '$0.185', '74.6 %', '1.25x', '119'."""
    if unit == "$":
        return f"${say(value)}"
    if unit == "x":
        return f"{say(value)}x"
    if unit == "%":
        return f"{say(value)} %"
    if unit in ("sequences", "steps"):
        return say(value)
    return f"{say(value)} {unit}"


def tflops(x: float) -> str:
    """As datasheets and cards state it: '989 TFLOPS', '1,979 TFLOPS'."""
    return f"{x / 1e12:,.4g} TFLOPS" if x < 1e15 else f"{x / 1e12:,.0f} TFLOPS"


def kib(n: float) -> str:
    return f"{n / 1024:g} KiB"


def setup_numbers(s: Setup) -> dict[str, str]:
    """The setup's figures for the question templates (same in every language)."""
    return {
        "model": s.model_name,
        "dtype": s.weight_dtype.upper(),
        "weights": fmt_bytes(s.weight_bytes, 3),
        "params": f"{s.params / 1e9:g}B",
        "kv_token": kib(s.kv_bytes_per_token),
        "hw": s.hardware_name,
        "bw": fmt_bandwidth(s.bandwidth_bytes_per_s, 3),
        "flops": tflops(s.peak_flops_per_s),
        "mem": fmt_bytes(s.memory_bytes, 3),
        "tp": str(s.tp),
        "group_bw": fmt_bandwidth(s.bandwidth_bytes_per_s * s.tp, 3),
        "group_flops": tflops(s.peak_flops_per_s * s.tp),
        "group_mem": fmt_bytes(s.memory_bytes * s.tp, 3),
    }


def ms(seconds: float) -> str:
    return fmt_time(seconds, 3)


def size(n: float) -> str:
    return fmt_bytes(n, 3)
