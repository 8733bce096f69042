"""The local history of answers, and a Leitner scheme that brings back the kinds answered wrong.

One JSON line per graded answer, appended and flushed at once, so quitting
(EOF, Ctrl-C) never loses what was answered. The file lives under the user's
data directory (platformdirs) unless `--history` or INFERLAB_DRILL_HISTORY
points elsewhere. Boxes: a kind starts in box 1; right moves it up one (to 4),
wrong sends it to box 0, close leaves it. A kind in box b is drawn with
weight 2^(4-b), so a kind answered wrong comes back 16 times as often as a
mastered one.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferlab.errors import InferlabError
from inferlab.jsonio import dumps_line

ENV = "INFERLAB_DRILL_HISTORY"
TOP_BOX = 4
NEW_BOX = 1


def history_path(flag: str | None = None) -> Path:
    if flag:
        return Path(flag).expanduser()
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    import platformdirs

    return platformdirs.user_data_path("inferlab") / "drill-history.jsonl"


@dataclass(frozen=True, slots=True)
class Entry:
    kind: str
    seed: int
    grade: str  # right | close | wrong
    mistake: str | None
    seconds: float  # time to answer
    at: str  # ISO 8601, UTC

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "seed": self.seed,
            "grade": self.grade,
            "mistake": self.mistake,
            "seconds": self.seconds,
            "at": self.at,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Entry:
        return cls(
            str(d["kind"]),
            int(d["seed"]),
            str(d["grade"]),
            d.get("mistake"),
            float(d["seconds"]),
            str(d["at"]),
        )


def load(path: Path) -> list[Entry]:
    """Every entry; a line cut short by a crash is skipped, not fatal."""
    if not path.exists():
        return []
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise InferlabError(f"cannot read the drill history {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:  # a binary file given as --history
        raise InferlabError(
            f"cannot read the drill history {path}: not a text file (byte {e.start} is not "
            "UTF-8); choose --history PATH"
        ) from e
    for line in lines:
        try:
            out.append(Entry.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError, RecursionError):
            continue
    return out


def append(path: Path, entry: Entry) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        torn = path.exists() and path.stat().st_size > 0 and not _ends_with_newline(path)
        with path.open("a", encoding="utf-8") as f:
            # After a line cut short by a crash, start afresh rather than extend it.
            f.write(("\n" if torn else "") + dumps_line(entry))
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise InferlabError(
            f"cannot write the drill history {path}: {e.strerror}; choose --history PATH"
        ) from e


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def boxes(entries: list[Entry], kinds: list[str]) -> dict[str, int]:
    box = dict.fromkeys(kinds, NEW_BOX)
    for e in entries:
        if e.kind not in box:
            continue  # a kind that no longer exists
        if e.grade == "right":
            box[e.kind] = min(box[e.kind] + 1, TOP_BOX)
        elif e.grade == "wrong":
            box[e.kind] = 0
    return box


def pick(rng: random.Random, box: dict[str, int], n: int) -> list[str]:
    """n kinds weighted by 2^(4-box); no kind twice until every kind has come up."""
    out: list[str] = []
    pool: list[str] = []
    while len(out) < n:
        if not pool:
            pool = list(box)
        k = rng.choices(pool, weights=[2 ** (TOP_BOX - box[k]) for k in pool])[0]
        pool.remove(k)
        out.append(k)
    return out


@dataclass(frozen=True, slots=True)
class KindStats:
    kind: str
    asked: int
    right: int
    close: int
    wrong: int
    box: int
    top_mistake: str | None
    mean_seconds: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "asked": self.asked,
            "right": self.right,
            "close": self.close,
            "wrong": self.wrong,
            "box": self.box,
            "top_mistake": self.top_mistake,
            "mean_seconds": self.mean_seconds,
        }


def stats(entries: list[Entry], kinds: list[str]) -> list[KindStats]:
    """Per kind, what goes wrong most first (most wrong answers, then lowest box)."""
    box = boxes(entries, kinds)
    out = []
    for k in kinds:
        es = [e for e in entries if e.kind == k]
        grades = Counter(e.grade for e in es)
        named = Counter(e.mistake for e in es if e.mistake)
        out.append(
            KindStats(
                kind=k,
                asked=len(es),
                right=grades["right"],
                close=grades["close"],
                wrong=grades["wrong"],
                box=box[k],
                top_mistake=named.most_common(1)[0][0] if named else None,
                mean_seconds=sum(e.seconds for e in es) / len(es) if es else None,
            )
        )
    out.sort(key=lambda s: (-s.wrong, s.box, -s.asked, s.kind))
    return out
