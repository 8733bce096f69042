"""--record FILE: one strict JSON line per interval, flushed as it is written.

The first line is a header (what was watched, the model and hardware figures
the floor used); every other line is a Frame: the raw normalised snapshot and
the derived values. A crash or Ctrl-C loses at most the line being written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import IO, Any

from inferlab.errors import InferlabError
from inferlab.jsonio import dumps_line, write_text_atomic
from inferlab.physics.floor import Floor
from inferlab.watch.frame import Frame

HEADER = "watch-header"


@dataclass(frozen=True, slots=True)
class Header:
    url: str
    model: str
    hardware: str
    interval_s: float
    window_s: float
    weight_bytes_per_step: float
    kv_bytes_per_token: float
    bandwidth_bytes_per_s: float
    peak_flops_per_s: float
    started_unix_s: float

    def to_json(self) -> dict[str, Any]:
        return {"record": HEADER, **{f.name: getattr(self, f.name) for f in fields(self)}}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Header:
        return cls(**{f.name: d[f.name] for f in fields(cls)})

    @classmethod
    def of(cls, url: str, ph: Floor, interval_s: float, window_s: float, t: float) -> Header:
        return cls(
            url=url,
            model=ph.cost.name,
            hardware=ph.hardware.name,
            interval_s=interval_s,
            window_s=window_s,
            weight_bytes_per_step=ph.cost.weight_bytes_per_step(1),
            kv_bytes_per_token=ph.cost.kv_bytes_per_token,
            bandwidth_bytes_per_s=ph.hardware.bandwidth_bytes_per_s,
            peak_flops_per_s=ph.peak_flops_per_s,
            started_unix_s=t,
        )


class Recorder:
    """Appends to FILE; each line is flushed so a reader (or a crash) sees whole lines only."""

    def __init__(self, path: Path, header: Header) -> None:
        try:
            self._f: IO[str] = _open_with_header(path, dumps_line(header.to_json()))
        except OSError as e:
            raise InferlabError(f"--record {path}: cannot write there ({e.strerror})") from e
        self.path = path
        self.lines = 1

    def _write(self, obj: object) -> None:
        self._f.write(dumps_line(obj))
        self._f.flush()
        self.lines += 1

    def write(self, frame: Frame) -> None:
        self._write(frame)

    def close(self) -> None:
        self._f.close()


def _open_with_header(path: Path, header_line: str) -> IO[str]:
    """FILE open for appending, its header written. A new file appears with its header
    already in it (written beside it, then renamed), so a reader never finds it empty."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():  # appended to: its earlier header stands until this one lands
        f = path.open("a", encoding="utf-8")
        f.write(header_line)
        f.flush()
        return f
    write_text_atomic(path, header_line)
    return path.open("a", encoding="utf-8")


def read_record(path: Path) -> tuple[Header, list[Frame]]:
    """The header and frames of a recorded watch (the last header, if appended to twice)."""
    header: Header | None = None
    frames: list[Frame] = []
    text = path.read_text(encoding="utf-8")
    # A watch still recording may be mid-line: only whole lines (ending in a newline) count.
    whole = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
    for n, line in enumerate(whole.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            raise InferlabError(f"{path}:{n}: not a JSON line ({e.msg})") from e
        if d.get("record") == HEADER:
            header, frames = Header.from_json(d), []
        elif d.get("record") == "frame":
            frames.append(Frame.from_json(d))
    if header is None:
        raise InferlabError(f"{path}: no watch header line (is it a `watch --record` file?)")
    return header, frames


def is_watch_record(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline()
        return bool(json.loads(first).get("record") == HEADER)
    except (OSError, ValueError, AttributeError):
        return False
