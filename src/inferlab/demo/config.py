"""The demo's settings as one typed value, and the sizes it picks when a flag is left out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inferlab.errors import ConfigError, literal


@dataclass(frozen=True, slots=True)
class TraceChoice:
    """Which slice of real traffic the last level replays (None: the demo's default)."""

    skip: bool
    name: str | None
    window: str | None
    speed: float
    length_scale: float | None
    block_tokens: int
    output_scale: float | None = None  # None: the length scale (the demo's own for its trace)


@dataclass(frozen=True, slots=True)
class DemoConfig:
    """Everything the demo's steps read; sizes already settled (see `planned_sizes`)."""

    quick: bool
    gguf: Path | None
    threads: int | None
    engine_bench: bool
    levels: tuple[int, ...]
    requests_per_level: int
    prompt_tokens: int
    output_tokens: int
    warmup: int | None
    seed: int
    request_timeout_s: float | None
    stall_factor: float
    lag_threshold_s: float
    trace: TraceChoice
    slo: str | None
    min_attainment: float
    out: Path | None
    overwrite: bool
    append_run: bool
    wide: bool
    strict: bool
    command: tuple[str, ...]


def fixed_length(value: str | int | None, flag: str) -> int | None:
    """The demo's lengths are fixed: one whole number of tokens."""
    if value is None or isinstance(value, int):
        return value
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ConfigError(f"{flag} {literal(repr(value))}: the demo takes a fixed length N >= 1")
    return n


def planned_sizes(
    quick: bool, levels: list[int] | None, requests: int | None, output_tokens: str | int | None
) -> tuple[tuple[int, ...], int, int]:
    """Levels, requests per level and output tokens: the flags', else the demo's defaults."""
    chosen = levels or ([1, 2, 4] if quick else [1, 2, 4, 8, 16])
    # --quick: 8, the fewest whose p50's interval has an upper end (6) with room, so its
    # levels can be graded (metrics/scoring.py: `ungradable`); 16 otherwise
    n = requests or (8 if quick else 16)
    out_tokens = fixed_length(output_tokens, "{output_tokens}") or (32 if quick else 128)
    return tuple(chosen), n, out_tokens
