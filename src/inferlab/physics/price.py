"""Price: a GPU-hour costs the same whatever it produces; tokens per hour decide the price."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Price:
    usd_per_gpu_hour: float
    gpus: int
    tokens_per_s: float
    tokens_per_hour: float
    usd_per_million_tokens: float


def price_per_million(usd_per_gpu_hour: float, tokens_per_s: float, gpus: int = 1) -> Price:
    """$ per 1e6 tokens = $/hour / (tokens/s x 3600) x 1e6."""
    per_hour = tokens_per_s * 3600.0
    usd = usd_per_gpu_hour * gpus / per_hour * 1e6
    return Price(usd_per_gpu_hour, gpus, tokens_per_s, per_hour, usd)
