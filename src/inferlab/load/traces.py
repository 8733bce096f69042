"""Real request traces: read one (a bundled name or a file), then shape it for replay.

read_trace(name_or_path) -> Trace
    Bundled names: azure-conv, azure-code, mooncake-conv (see load/data/README.md), or a
    path in any layout of `trace_formats`. Times become seconds from the first request.
parse_window(text, flag="{trace_window}") -> (start_s, end_s)
    `START:END` in seconds of trace time (units allowed: 10min:20min); either side may be empty.
shape_trace(trace, window, speed, length_scale, block_tokens) -> ShapedTrace
    Keeps the rows with START <= t < END (trace time, before any speed-up), replays them
    `speed` times faster from 0 at START, multiplies every length by `length_scale`
    (rounded to the nearest token, halves up, at least 1). Mooncake hash ids stand for
    prompt blocks of `block_tokens` tokens, scaled the same way, so the prompts share as the
    trace's did.
ShapedTrace.prompt_blocks(i) -> ((hash_id, tokens), ...)
    How request i's prompt splits into shared blocks; the rest of the prompt is unique.
check_context(shaped, n_ctx, source) -> None
    One error line naming the first row whose prompt + output exceeds the server's context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from inferlab.errors import ConfigError, InferlabError, literal
from inferlab.load.trace_formats import Rows, TraceFormat, parse_rows

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]

BUNDLED = {
    "azure-conv": "AzureLLMInferenceTrace_conv.csv",
    "azure-code": "AzureLLMInferenceTrace_code.csv",
    "mooncake-conv": "mooncake_conversation_trace.jsonl",
}
DEFAULT_BLOCK_TOKENS = 512  # Mooncake's hash ids each stand for 512 prompt tokens


@dataclass(frozen=True, slots=True, eq=False)
class Trace:
    """A trace as read: one row per request, sorted by time (arrays are read-only)."""

    source: str  # the bundled name or the file, as errors name it
    format: TraceFormat
    arrival_s: Floats  # seconds from the trace's first request
    prompt_tokens: Ints
    output_tokens: Ints
    hash_ids: tuple[tuple[int, ...], ...] | None  # Mooncake only
    file_lines: Ints  # each row's 1-based line number in the file
    start_s: float  # the first request's time on the file's own clock (epoch s for Azure)

    @property
    def rows(self) -> int:
        return len(self.arrival_s)

    @property
    def span_s(self) -> float:
        """From the first request to the last."""
        return float(self.arrival_s[-1])


@dataclass(frozen=True, slots=True, eq=False)
class ShapedTrace:
    """The rows to replay: arrivals from 0 after window and speed-up, lengths after scaling."""

    source: str
    arrival_s: Floats  # replay instants, seconds from the start of the window, sped up
    prompt_tokens: Ints  # scaled, >= 1
    output_tokens: Ints  # scaled, >= 1
    hash_ids: tuple[tuple[int, ...], ...] | None
    block_tokens: int  # tokens each hash id stands for, after scaling (>= 1)
    file_lines: Ints
    window_s: tuple[float, float]  # trace time kept, [start, end)
    speed: float
    length_scale: float  # prompts' (and outputs', unless output_scale says otherwise)
    output_scale: float

    @property
    def rows(self) -> int:
        return len(self.arrival_s)

    @property
    def span_s(self) -> float:
        """From the start of the replay to its last arrival."""
        return float(self.arrival_s[-1])

    def prompt_blocks(self, i: int) -> tuple[tuple[int, int], ...]:
        """Request i's shared blocks as (hash id, tokens), in prompt order, summing to at most
        its prompt: the same id is the same text. The last block may be partial; what the blocks
        do not cover (rounding when scaled) is unique text. Empty without hash ids."""
        if self.hash_ids is None:
            return ()
        left = int(self.prompt_tokens[i])
        out: list[tuple[int, int]] = []
        for h in self.hash_ids[i]:
            if left <= 0:
                break
            take = min(self.block_tokens, left)
            out.append((h, take))
            left -= take
        return tuple(out)

    def describe(self) -> str:
        """One phrase: source, window, rows, speed and scale."""
        start, end = self.window_s
        window = f"{start:g} s to the end" if math.isinf(end) else f"{start:g}:{end:g} s"
        extra = "" if self.speed == 1 else f", {self.speed:g}x faster"
        extra += self._scales()
        return (
            f"{self.source} window {window}: {self.rows:,} requests over {self.span_s:.1f} s{extra}"
        )

    def _scales(self) -> str:
        if self.output_scale != self.length_scale:
            return f", prompts x{self.length_scale:g}, outputs x{self.output_scale:g}"
        return "" if self.length_scale == 1 else f", lengths x{self.length_scale:g}"


def read_trace(name_or_path: str) -> Trace:
    """A bundled trace by name, or a file in any known layout."""
    if name_or_path in BUNDLED:
        res = resources.files("inferlab.load") / "data" / BUNDLED[name_or_path]
        return _to_trace(parse_rows(name_or_path, res.read_text(encoding="utf-8-sig")))
    path = Path(name_or_path)
    if not path.is_file():
        names = ", ".join(BUNDLED)
        raise InferlabError(f"trace {name_or_path!r}: no such file, nor a bundled trace ({names})")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise InferlabError(f"cannot read trace {path}: {e}") from None
    return _to_trace(parse_rows(str(path), text))


def _to_trace(rows: Rows) -> Trace:
    # Only the legacy simulate layout may be unsorted (it was always sorted on reading).
    order = np.argsort(rows.times_s, kind="stable")
    hashes = rows.hash_ids
    if hashes is not None and bool(np.any(order != np.arange(len(order)))):
        hashes = tuple(hashes[k] for k in order)
    start = float(rows.times_s[order[0]])
    return Trace(
        source=rows.source,
        format=rows.format,
        arrival_s=_frozen_f(rows.times_s[order] - start),
        prompt_tokens=_frozen_i(rows.prompt_tokens[order]),
        output_tokens=_frozen_i(rows.output_tokens[order]),
        hash_ids=hashes,
        file_lines=_frozen_i(rows.lines[order]),
        start_s=start,
    )


def _frozen_f(arr: Floats) -> Floats:
    arr.flags.writeable = False
    return arr


def _frozen_i(arr: Ints) -> Ints:
    arr.flags.writeable = False
    return arr


WINDOW_FORMS = (
    "write START:END, seconds of trace time from the first request (e.g. 0:600, 10min:20min, 300:)"
)


def parse_window(text: str, flag: str = "{trace_window}") -> tuple[float, float]:
    """'60:120' -> (60.0, 120.0); an empty START is 0, an empty END the end of the trace."""
    from inferlab.units import parse_time

    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        start = parse_time(parts[0]) if parts[0].strip() else 0.0
        end = parse_time(parts[1]) if parts[1].strip() else math.inf
    except (ValueError, InferlabError):
        raise ConfigError(f"{flag} {literal(repr(text))}: {literal(WINDOW_FORMS)}") from None
    if not (0 <= start < end) or math.isnan(end):
        raise ConfigError(
            f"{flag} {literal(repr(text))}: needs 0 <= START < END; {literal(WINDOW_FORMS)}"
        )
    return start, end


def shape_trace(
    trace: Trace,
    window: tuple[float, float] | None = None,
    speed: float = 1.0,
    length_scale: float = 1.0,
    block_tokens: int = DEFAULT_BLOCK_TOKENS,
    output_scale: float | None = None,
) -> ShapedTrace:
    """Window (trace time, START included, END excluded), speed-up, then length scaling
    (outputs by `output_scale` where given, else by `length_scale` as prompts are)."""
    if not (0 < speed < math.inf):
        raise ConfigError(f"{{trace_speed}} must be a positive number (got {speed:g})")
    out_scale = length_scale if output_scale is None else output_scale
    for flag, scale in (("length_scale", length_scale), ("output_scale", out_scale)):
        if not (0 < scale < math.inf):
            raise ConfigError(f"{{{flag}}} must be a positive number (got {scale:g})")
    if block_tokens < 1:
        raise ConfigError(f"{{trace_block_tokens}} must be at least 1 (got {block_tokens})")
    start, end = window if window is not None else (0.0, math.inf)
    lo = int(np.searchsorted(trace.arrival_s, start, side="left"))
    hi = int(np.searchsorted(trace.arrival_s, end, side="left"))
    if hi <= lo:
        shown = f"{start:g}:{'' if math.isinf(end) else f'{end:g}'}"
        raise ConfigError(
            f"{literal(trace.source)}: {{trace_window}} {shown} holds no request; the trace has "
            f"{trace.rows:,} rows over {trace.span_s:,.1f} s (from 0 to {trace.span_s:.1f} s)"
        )
    hashes = None if trace.hash_ids is None else trace.hash_ids[lo:hi]
    return ShapedTrace(
        source=trace.source,
        arrival_s=_frozen_f((trace.arrival_s[lo:hi] - start) / speed),
        prompt_tokens=_frozen_i(scale_lengths(trace.prompt_tokens[lo:hi], length_scale)),
        output_tokens=_frozen_i(scale_lengths(trace.output_tokens[lo:hi], out_scale)),
        hash_ids=hashes,
        block_tokens=int(scale_lengths(np.array([block_tokens]), length_scale)[0]),
        file_lines=trace.file_lines[lo:hi],
        window_s=(start, end),
        speed=speed,
        length_scale=length_scale,
        output_scale=out_scale,
    )


def scale_lengths(tokens: Ints, factor: float) -> Ints:
    """Each length times `factor`, rounded to the nearest token (halves up), at least 1."""
    if factor == 1:
        return tokens.copy()
    out: Ints = np.maximum(np.floor(tokens * factor + 0.5), 1).astype(np.int64)
    return out


def check_context(shaped: ShapedTrace, n_ctx: int, source: str) -> None:
    """Raise one line naming the first row whose prompt + output exceeds `n_ctx` tokens;
    `source` says where the limit comes from (e.g. "the server's n_ctx")."""
    total = shaped.prompt_tokens + shaped.output_tokens
    over = np.flatnonzero(total > n_ctx)
    if over.size == 0:
        return
    i = int(over[0])
    scaled = "" if shaped.length_scale == 1 else f" after {{length_scale}} {shaped.length_scale:g}"
    if shaped.output_scale != shaped.length_scale:
        scaled += f" and {{output_scale}} {shaped.output_scale:g}"
    fit = shaped.length_scale * n_ctx / float(total.max())
    raise ConfigError(
        f"{literal(shaped.source)}:{int(shaped.file_lines[i])}: prompt "
        f"{int(shaped.prompt_tokens[i]):,} + output {int(shaped.output_tokens[i]):,} tokens"
        f"{scaled} exceeds {literal(source)} of {n_ctx:,} ({over.size:,} of {shaped.rows:,} "
        f"requests do); use {{length_scale}} {_round_down(fit)} or a {{trace_window}} without them"
    )


def _round_down(x: float) -> str:
    """Two significant figures, rounded down (a suggested scale must still fit)."""
    digits = 1 - math.floor(math.log10(x))
    return f"{math.floor(x * 10**digits) / 10**digits:g}"
