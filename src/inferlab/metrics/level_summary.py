"""One load level's records -> the summary block that summary.json and the console show.

There is one level summariser: `metrics.columns.summarize_columns`, over arrays. Bench
turns its records into columns here; the simulator builds the columns straight from its
step tables (sim/output.py). Both give the same LevelSummary for the same requests.
"""

from __future__ import annotations

from inferlab.metrics.columns import RequestColumns, summarize_columns
from inferlab.records import RequestRecord
from inferlab.summary import LevelSummary
from inferlab.vocab import LevelKind


def summarize_level(
    label: str,
    kind: LevelKind,
    value: float,
    records: list[RequestRecord],
    stall_factor: float = 5.0,
) -> LevelSummary:
    """Warm-up records count as `requests_warmup`; only measured ones enter the statistics."""
    columns = RequestColumns.from_records(records)
    return summarize_columns(label, kind, value, columns, stall_factor)
