"""A paired run's blocks (bench/blocks.py): how a level is cut, the order-balanced sequence,
the --url labels, and the records' endpoint and block (old records still read)."""

from __future__ import annotations

import itertools

import pytest

from inferlab.bench.blocks import BlockPlan, LevelBlocks, block_order, block_plan, side_level
from inferlab.commands.flags.paired import url_targets
from inferlab.errors import InferlabError
from inferlab.load.spec import Level
from inferlab.records import RequestRecord


@pytest.mark.parametrize(
    ("requests", "streams", "per_stream", "plan"),
    [
        (16, 1, 2, BlockPlan(8, 2)),  # the default sweep's c=1: 8 pairs of 2 requests
        (16, 2, 2, BlockPlan(4, 4)),
        (16, 4, 2, BlockPlan(4, 4)),  # 2 per stream would give 2 pairs: 1 per stream, 4 pairs
        (8, 2, 2, BlockPlan(4, 2)),
        (48, 4, 2, BlockPlan(6, 8)),  # --repeat 3 of 16: more blocks, not bigger ones
        (18, 1, 2, BlockPlan(10, 2)),  # 9 blocks rounded up to an even 10: as many AB as BA
        (2, 4, 2, BlockPlan(4, 4)),  # too few to pair: the fewest that give an interval
    ],
)
def test_block_plan(requests: int, streams: int, per_stream: int, plan: BlockPlan) -> None:
    assert block_plan(requests, streams, per_stream) == plan


def _pairs(order: tuple[int, ...], k: int) -> list[tuple[int, ...]]:
    return [order[i : i + k] for i in range(0, len(order), k)]


@pytest.mark.parametrize("seed", range(20))
def test_two_endpoints_run_as_many_ab_as_ba(seed: int) -> None:
    order = block_order(2, 8, seed)
    rounds = _pairs(order, 2)
    assert sorted(set(rounds)) == [(0, 1), (1, 0)]
    assert rounds.count((0, 1)) == rounds.count((1, 0)) == 4
    assert block_order(2, 8, seed) == order  # the run's seed gives the same order


def test_orders_are_drawn_not_fixed() -> None:
    assert len({block_order(2, 8, seed) for seed in range(20)}) > 10


def test_three_endpoints_balance_every_pair() -> None:
    order = block_order(3, 6, seed=3)
    rounds = _pairs(order, 3)
    assert all(sorted(r) == [0, 1, 2] for r in rounds)
    for i, j in itertools.combinations(range(3), 2):
        first = sum(r.index(i) < r.index(j) for r in rounds)
        assert first == len(rounds) - first  # i before j as often as j before i


def test_a_block_belongs_to_its_round() -> None:
    lb = LevelBlocks(Level("concurrency", 4), BlockPlan(4, 8), block_order(2, 4, 0))
    assert [lb.round_of(b) for b in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert side_level(lb.level, "new").label == "new c=4"


def test_url_labels() -> None:
    assert url_targets(["http://127.0.0.1:8080/v1"]) == ()  # one bare URL: today's bench
    two = url_targets(["http://h:1/v1", "http://h:2/v1?x=y"])
    assert [(t.label, t.url) for t in two] == [
        ("base", "http://h:1/v1"),
        ("new", "http://h:2/v1?x=y"),
    ]
    three = url_targets(["a=http://h:1/v1", "http://h:2/v1", "q8=http://h:3/v1"])
    assert [t.label for t in three] == ["a", "b", "q8"]


@pytest.mark.parametrize(
    ("urls", "said"),
    [
        (["x=http://h:1/v1", "x=http://h:2/v1"], "two endpoints labelled 'x'"),
        (["new=http://h:1/v1", "http://h:2/v1"], "two endpoints labelled 'new'"),
        (["base=", "new=http://h:2/v1"], "no URL after 'base='"),
        (["=http://h:1/v1", "http://h:2/v1"], "no label before '='"),
        (["base=http://h:1/v1"], "give a second --url"),
    ],
)
def test_url_labels_refused(urls: list[str], said: str) -> None:
    with pytest.raises(InferlabError, match=said):
        url_targets(urls)


def test_records_name_endpoint_and_block_and_old_ones_still_read() -> None:
    rec = RequestRecord(1, "new c=2", "measure", 8, 16, endpoint="new", block=3)
    back = RequestRecord.from_json(rec.to_json())
    assert (back.endpoint, back.block) == ("new", 3)
    single = RequestRecord(1, "c=2", "measure", 8, 16).to_json()
    assert "endpoint" not in single and "block" not in single  # one URL: as always
    old = RequestRecord.from_json(single)
    assert old.endpoint is None and old.block is None
