"""The history file and the Leitner boxes that bring wrong kinds back."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from inferlab.drill import history
from inferlab.drill.history import Entry


def e(kind: str, grade: str, mistake: str | None = None) -> Entry:
    return Entry(kind, 1, grade, mistake, 10.0, "2026-01-01T00:00:00+00:00")


def test_path_from_env_and_flag(history_file: Path, tmp_path: Path) -> None:
    assert history.history_path() == history_file
    assert history.history_path(str(tmp_path / "x.jsonl")) == tmp_path / "x.jsonl"


def test_append_load_skips_a_torn_line(history_file: Path) -> None:
    history.append(history_file, e("ridge", "right"))
    with history_file.open("a") as f:
        f.write('{"kind": "ridge", "se')  # a crash mid-write
    history.append(history_file, e("cost", "wrong", "power-of-ten"))
    assert [x.kind for x in history.load(history_file)] == ["ridge", "cost"]


def test_boxes_and_pick_favour_wrong_kinds() -> None:
    entries = [e("a", "right"), e("a", "right"), e("a", "right"), e("b", "wrong"), e("c", "close")]
    box = history.boxes(entries, ["a", "b", "c"])
    assert box == {"a": 4, "b": 0, "c": 1}
    firsts = Counter(history.pick(random.Random(s), box, 1)[0] for s in range(2000))
    assert firsts["b"] > 1.5 * firsts["c"] > 1.5 * firsts["a"]
    assert sorted(history.pick(random.Random(1), box, 3)) == ["a", "b", "c"]  # no repeats


def test_stats_put_the_most_wrong_first() -> None:
    entries = [e("a", "right"), e("b", "wrong", "kv-shared"), e("b", "wrong", "kv-shared")]
    rows = history.stats(entries, ["a", "b", "c"])
    assert [r.kind for r in rows] == ["b", "c", "a"]  # unseen c before the known a
    assert (rows[0].wrong, rows[0].top_mistake, rows[0].box) == (2, "kv-shared", 0)
