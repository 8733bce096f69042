"""A level divided among workers: streams, requests and warm-up, with unique request ids."""

from __future__ import annotations

import pytest

from inferlab.bench.drive import split_counts, split_level
from inferlab.bench.prompt_text import Prompt


def _prompts(n: int) -> list[Prompt]:
    return [Prompt(f"prompt {i}", 8, index=i) for i in range(n)]


@pytest.mark.parametrize(("total", "parts"), [(1024, 4), (10, 4), (3, 8), (0, 2), (7, 1)])
def test_counts_add_up_and_differ_by_at_most_one(total: int, parts: int) -> None:
    counts = split_counts(total, parts)
    assert sum(counts) == total and len(counts) == parts
    assert max(counts) - min(counts) <= 1


def test_concurrency_1024_over_4_workers_is_256_each() -> None:
    shares = split_level("concurrency", 1024, "c=1024", _prompts(2048 + 1024), 1024, 100, 4)
    assert [s.value for s in shares] == [256] * 4
    warm = [sum(p.index < s.warmup for p in s.prompts) for s in shares]
    assert warm == [256] * 4  # each worker's first 256 prompts are its warm-up
    assert all(p.index < s.warmup for s in shares for p in s.prompts[:256])
    ids = sorted(s.first_id + p.index for s in shares for p in s.prompts)
    assert ids == list(range(100, 100 + 3072))  # unique, contiguous, none lost
    assert {s.level_label for s in shares} == {"c=1024"}


def test_fewer_streams_than_workers_uses_fewer_workers() -> None:
    shares = split_level("concurrency", 2, "c=2", _prompts(10), 2, 0, 4)
    assert len(shares) == 2 and [s.value for s in shares] == [1, 1]


def test_rate_is_divided_evenly_and_ids_stay_unique() -> None:
    shares = split_level("rate", 200.0, "rate=200/s", _prompts(101), 2, 0, 16)
    assert len(shares) == 16
    assert sum(s.value for s in shares) == pytest.approx(200.0)
    assert sum(len(s.prompts) for s in shares) == 101
    seen = [s.first_id + p.index for s in shares for p in s.prompts]
    assert sorted(seen) == list(range(101))


def test_a_conversation_stays_on_one_worker() -> None:
    prompts = [Prompt(f"p{i}", 4, index=i, conversation_id=i // 3, turn=i % 3) for i in range(12)]
    shares = split_level("concurrency", 4, "c=4", prompts, 0, 0, 2)
    for s in shares:
        convs = [p.conversation_id for p in s.prompts]
        assert convs == sorted(convs) and all(convs.count(c) == 3 for c in set(convs))
    assert sorted(p.index for s in shares for p in s.prompts) == list(range(12))
