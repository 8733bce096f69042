"""The level's gaps computed a slice of events at a time equal the whole array's."""

from __future__ import annotations

import numpy as np
import pytest

from inferlab.metrics import columns


@pytest.mark.parametrize("slice_events", [1, 7, 64, 1 << 20])
def test_gaps_by_slices_are_the_whole_arrays(
    monkeypatch: pytest.MonkeyPatch, slice_events: int
) -> None:
    rng = np.random.default_rng(5)
    event_ns = np.cumsum(rng.integers(1, 10**8, 1000)) + 3_600_000_000_000
    keep = rng.random(999) > 0.1
    whole = np.diff(event_ns)[keep].astype(float) * columns.NS
    monkeypatch.setattr(columns, "GAP_SLICE", slice_events)
    got = columns._kept_gaps_s(event_ns, keep)
    assert got.tolist() == whole.tolist()  # to the bit, in order
    assert len(columns._kept_gaps_s(event_ns[:1], keep[:0])) == 0
